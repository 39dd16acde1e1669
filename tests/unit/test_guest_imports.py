# SPDX-License-Identifier: GPL-2.0-only
"""What a guest's pytest imports: never the matrix's report stack.

Why: every module a TCG guest imports costs it 15-30x what it costs natively, and the report
(Jinja2 for matrix.html, matplotlib for plots) is written by the host only. A stray runtime
import (one slipped back into the KTAP writer in a merge) went unnoticed for a whole
session; this keeps it out.
"""

import subprocess
import sys

from netregress import plugins

HOST_ONLY = ("jinja2", "matplotlib")


def test_the_guests_plugins_do_not_import_the_report_stack() -> None:
    modules = [*plugins.pytest_plugins, "kernels.vm.phases", "pytest_reportlog.plugin"]
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(' '.join(m for m in {HOST_ONLY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []
