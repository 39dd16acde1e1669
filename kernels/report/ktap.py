# SPDX-License-Identifier: GPL-2.0-only
"""KTAP version 1 output, so kselftest runners, LAVA and KernelCI read netregress as they read
a kselftest (the format: docs/ktap.md).

Two producers share one renderer: `pytest --ktap-file PATH` (any run, on the host or in a
guest, and the host side of `pytest --kernel`, whose replayed reports look local) and the
matrix, which writes `ktap-<kernel>.tap` from its cells — that one survives a guest that died
mid-run, because the cells already hold the crash.

`KSFT_MACHINE_SLOW` (kselftest's convention: set on a machine too slow for timing-sensitive
tests) turns a failure on timing alone, a packetdrill script that stopped on a timing check,
into an XFAIL saying its timing was not checkable there: never a pass, as our timing policy
wants of a mismatch (docs/timing-tolerance.md), and not a failure kselftest runners would count.
"""

import os
from dataclasses import replace
from pathlib import Path

import pytest

from kernels.matrix.results import Outcome, TestResult, from_collect_error, from_reports
from kernels.report.model import Matrix
from kernels.report.record import Record
from netregress.session import KernelUnderTest

VERSION_LINE = "KTAP version 1"
MACHINE_SLOW = "KSFT_MACHINE_SLOW"
NOT_CHECKABLE = f"timing not checkable ({MACHINE_SLOW})"
_DETAIL_LINES = 20


def machine_slow() -> bool:
    """True when this environment says the machine is slow (the variable set, as kselftest's
    runners test it)."""
    return bool(os.environ.get(MACHINE_SLOW))


def _failed_on_timing_alone(result: TestResult) -> bool:
    """A failure whose only finding is a timing mismatch: the script stopped on a timing
    check (its timing record says so), so nothing else of it was judged."""
    record = result.timing()
    if result.outcome != Outcome.FAIL or record is None:
        return False
    return record.verdict == "failed" and record.timing_error != ""


def _as_written(result: TestResult, slow: bool) -> TestResult:
    """The result as KTAP states it: on a slow machine a failure on timing alone is an XFAIL
    (its details kept, so the mismatch is still shown), everything else as it is."""
    if slow and _failed_on_timing_alone(result):
        return replace(result, outcome=Outcome.XFAIL, message=NOT_CHECKABLE)
    return result


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _description(nodeid: str) -> str:
    """A test name as KTAP allows it: '#' would start the directive, so it is replaced."""
    return _one_line(nodeid).replace("#", "%23")


def _subtest_lines(result: TestResult) -> list[str]:
    """A kernel selftest item's sub-tests as a nested KTAP document (indented four spaces),
    so each check of a script is a result a KTAP reader sees, not only the script's."""
    subtests = result.subtests()
    if not subtests:
        return []
    lines = [VERSION_LINE, f"1..{len(subtests)}"]
    for number, (verdict, sub) in enumerate(subtests, start=1):
        name = _description(sub)
        lines.append(
            f"not ok {number} {name}"
            if verdict == "fail"
            else f"ok {number} {name}" + (f" # {verdict.upper()}" if verdict != "pass" else "")
        )
    return [f"    {line}" for line in lines]


def _result_lines(number: int, result: TestResult) -> list[str]:
    """One result line, preceded by its sub-tests (a kernel selftest's) and diagnostic lines
    for a failure (its last lines)."""
    return _subtest_lines(result) + _own_lines(number, result)


def _own_lines(number: int, result: TestResult) -> list[str]:
    name = _description(result.nodeid)
    why = _one_line(result.message)
    match result.outcome:
        case Outcome.PASS:
            return [f"ok {number} {name}"]
        case Outcome.SKIP:
            why = why.removeprefix("Skipped: ")  # pytest's prefix, redundant after SKIP
            return [f"ok {number} {name} # SKIP {why}".rstrip()]
        case Outcome.XFAIL:
            detail = result.details.splitlines()[-_DETAIL_LINES:]  # a slow machine's mismatch
            return [f"# {line}".rstrip() for line in detail] + [
                f"ok {number} {name} # XFAIL {why}".rstrip()
            ]
        case Outcome.CRASH:
            return [f"not ok {number} {name} # ERROR {why}".rstrip()]
        case _:
            detail = (result.details or result.message).splitlines()[-_DETAIL_LINES:]
            return [f"# {line}".rstrip() for line in detail] + [f"not ok {number} {name}"]


def title(kernel: KernelUnderTest) -> str:
    """The first diagnostic line: which kernel the results are about, as every report says."""
    return f"netregress on {kernel.words()}"


def render(results: list[TestResult], header: list[str], *, slow: bool = False) -> str:
    """A flat KTAP document: version, plan, the `header` lines as diagnostics (the title
    first), one line per test, kselftest-style totals; `slow` (:func:`machine_slow`) writes a
    failure on timing alone as an XFAIL."""
    results = [_as_written(result, slow) for result in results]
    lines = [VERSION_LINE, f"1..{len(results)}", *(f"# {_one_line(line)}" for line in header)]
    for number, result in enumerate(results, start=1):
        lines += _result_lines(number, result)
    count = {o: sum(r.outcome == o for r in results) for o in Outcome}
    lines.append(
        f"# Totals: pass:{count[Outcome.PASS]} fail:{count[Outcome.FAIL]} "
        f"xfail:{count[Outcome.XFAIL]} xpass:0 skip:{count[Outcome.SKIP]} "
        f"error:{count[Outcome.CRASH]}"
    )
    return "\n".join(lines) + "\n"


def write(matrix: Matrix, rec: Record, out_dir: Path) -> list[Path]:
    """`ktap-<kernel>.tap` per kernel column, rows in matrix order (the console row last)."""
    written = []
    for run in matrix.runs:
        kernel = run.under_test()
        path = out_dir / f"ktap-{run.name}.tap"
        header = [title(kernel) if kernel else f"netregress on {run.name}"]
        path.write_text(render(matrix.column(run.name), header, slow=machine_slow()))
        written.append(path)
    return written


class KtapWriter:
    """pytest plugin object behind `--ktap-file`: gathers each test's phase reports and writes
    the file when the session ends (registered on the controller only, never on an xdist
    worker, so one file is written once)."""

    def __init__(self, path: Path, header: list[str]) -> None:
        self.path = path
        self.header = header
        self._reports: dict[str, list[pytest.TestReport]] = {}
        self._broken: list[TestResult] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that fails to import is a failed test for a kselftest reader, not silence."""
        if report.failed:
            self._broken.append(from_collect_error(report))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._reports.setdefault(report.nodeid, []).append(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        results = [from_reports(nodeid, reports) for nodeid, reports in self._reports.items()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(render([*self._broken, *results], self.header, slow=machine_slow()))
