# SPDX-License-Identifier: GPL-2.0-only
"""The kernel's own packetdrill selftests (tools/testing/selftests/net/packetdrill): where the
corpus comes from (source.py), what its runner passes (runner.py), what its scripts need
(needs.py), their feature markers (features.py) and the pytest items (pytest_plugin.py).

Why the mark below: the corpus plugin imports the packetdrill plugin it extends, so when it is
named alone pytest meets that plugin already imported and could not rewrite its asserts; marked
here, before either is imported, it is rewritten all the same (outside pytest, a no-op)."""

import pytest

pytest.register_assert_rewrite("packetdrill.pytest_plugin")
