# SPDX-License-Identifier: GPL-2.0-only
"""What every human view of the matrix shows alike: each kernel's line and each cell's word.

Why one module: the terminal table, matrix.md and matrix.html must call a cell and a kernel
the same, and matrix.json carries the same kernel lines under the same header.
"""

import re

from kernels.matrix.results import Outcome, TestResult
from kernels.matrix.runner import KernelRun

WORDS = {
    Outcome.PASS: "pass",
    Outcome.FAIL: "FAIL",
    Outcome.XFAIL: "xfail",
    Outcome.SKIP: "skip",
    Outcome.CRASH: "CRASH",
}
WIDENED = "pass~"
LEGEND = (
    f"{WIDENED}: passed only with late-side timing slack for a slow machine "
    "(docs/timing-tolerance.md)"
)
KERNEL_HEADER = [
    "kernel",
    "release",
    "version",
    "accel",
    "boot s",
    "total s",
    "pkt tolerance",
    "status",
]
_COMMIT = re.compile(r"\b[0-9a-f]{12,40}\b")


def _packetdrill_slack(run: KernelRun) -> str:
    """The late-side timing slack the guest's packetdrill items ran with (their structured
    timing records): slow, emulated guests get slack, and the report says how much."""
    for result in run.results:
        record = result.timing()
        if record is not None:
            tolerance = record.tolerance
            slack = tolerance.late_slack_usecs / 1000
            return f"+{slack:.1f} ms late ({tolerance.slack_from})"
    return "-"


def kernel_line(run: KernelRun) -> list[str]:
    """A kernel's cells under :data:`KERNEL_HEADER`."""
    kernel = run.kernel
    boot = f"{run.boot_seconds:.1f}" if run.boot_seconds is not None else "-"
    return [
        run.name,
        kernel.release if kernel else "-",
        kernel.version if kernel else "-",
        run.accel,
        boot,
        f"{run.total_seconds:.1f}",
        _packetdrill_slack(run),
        run.problem.reason if run.problem else "ok",
    ]


def word(cell: TestResult | None) -> str:
    """A cell's word. A pass that needed timing widening shows as such; a known kernel
    difference (an expectations.toml xfail citing its commit) shows the commit in its cell,
    so the grid tells kernels apart without opening the reasons."""
    if cell is None:
        return "-"
    record = cell.timing()
    if cell.outcome == Outcome.PASS and record and record.verdict == "widened":
        return WIDENED
    if cell.outcome == Outcome.XFAIL and (commit := _COMMIT.search(cell.message)):
        return f"xfail {commit.group()[:12]}"
    return WORDS[cell.outcome]
