# SPDX-License-Identifier: GPL-2.0-only
"""The matrix every report renders: rows = tests, columns = kernels, a cell per pair.

Why a module of its own, in the report package: every output format (kernels/report/outputs.py
lists them), the record and `merge` read this one model, and nothing below the report needs
it (a guest's pytest judges one kernel; the matrix exists once all of them are back). It
imports no renderer, so a format the guest's pytest loads (KTAP, JUnit) can use it too.

Why a synthetic "(kernel console)" row: a WARN splat or oops can happen while every test still
passes; the row makes such a kernel visibly red instead of hiding the finding in a log.
"""

from dataclasses import dataclass

from kernels.matrix.results import UNEXPECTED, Outcome, TestResult
from kernels.matrix.runner import KernelRun

CONSOLE_ROW = "(kernel console)"


@dataclass(frozen=True)
class Matrix:
    """Every kernel's results, completed so that each row has a cell per kernel."""

    runs: list[KernelRun]
    rows: list[str]
    cells: dict[tuple[str, str], TestResult]

    def cell(self, nodeid: str, kernel: str) -> TestResult | None:
        return self.cells.get((nodeid, kernel))

    def column(self, kernel: str) -> list[TestResult]:
        """One kernel's cells in row order (the console row last)."""
        return [c for nodeid in self.rows if (c := self.cell(nodeid, kernel))]

    def unexpected(self) -> list[tuple[str, str, TestResult]]:
        """(test, kernel, result) for every fail and crash."""
        return [
            (nodeid, run.name, result)
            for nodeid in self.rows
            for run in self.runs
            if (result := self.cell(nodeid, run.name)) and result.outcome in UNEXPECTED
        ]


def build(runs: list[KernelRun], collected: list[str]) -> Matrix:
    """Rows: the host's collection order, then tests only a guest found; crashes fill gaps.

    A kernel that died has no result for the tests after the crash: those cells are "crash"
    too, because the kernel under test is why they did not run.
    """
    rows = list(dict.fromkeys(collected))
    found = {r.nodeid for run in runs for r in run.results}
    rows += sorted(found - set(rows))
    cells: dict[tuple[str, str], TestResult] = {}
    for run in runs:
        for result in run.results:
            cells[(result.nodeid, run.name)] = result
        problem = run.problem
        console = (
            TestResult(CONSOLE_ROW, Outcome.CRASH, problem.reason, problem.excerpt)
            if problem
            else TestResult(CONSOLE_ROW, Outcome.PASS)
        )
        cells[(CONSOLE_ROW, run.name)] = console
        if problem:
            for nodeid in rows:
                cells.setdefault(
                    (nodeid, run.name), TestResult(nodeid, Outcome.CRASH, problem.reason)
                )
    return Matrix(runs, [*rows, CONSOLE_ROW], cells)
