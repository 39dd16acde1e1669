# SPDX-License-Identifier: GPL-2.0-only
"""The kernel's own network shell selftests (tools/testing/selftests/net and net/forwarding):
where they come from (source.py), their C helpers (build.py), which scripts and how they are
marked (scripts.py, scripts.toml), one run contained (run.py), its output read as sub-tests
(output.py), the verdict (verdict.py) and the pytest items (pytest_plugin.py)."""
