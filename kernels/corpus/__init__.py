# SPDX-License-Identifier: GPL-2.0-only
"""The kernel's own packetdrill selftests (tools/testing/selftests/net/packetdrill): where the
corpus comes from (source.py), what its runner passes (runner.py), what its scripts need
(needs.py), their feature markers (features.py) and the pytest items (pytest_plugin.py)."""
