# SPDX-License-Identifier: GPL-2.0-only
"""The field bug C01 (TCPWqueueTooBig stall) as a build input: its source, patch and case.

Why one place: the re-introduced-bug check and the bisect demo must use the same patch on the
same source and run the same case, or "proven caught" would be about two different things.
"""

from kernels.paths import REPO_ROOT

PACKAGE = "linux-source-6.1"
PATCH = REPO_ROOT / "kernels/mutants/tcp-c01-fragment-2019-wqueue-limit.patch"
# The kernel-facing test only: the file's other test checks the harness, not the kernel.
CASE = "tests/cases/test_c01_tcp_wqueue_too_big.py::test_c01_rto_retransmission_not_blocked"
