"""The matrix report: cells, crash filling, renderings, JUnit round trip, the progress log."""

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from _pytest.reports import TestReport

from kernels.acquire.kernel import BootableKernel
from kernels.matrix import progress_log
from kernels.matrix.results import TestResult
from kernels.matrix.runner import KernelRun
from kernels.report.junit import read_junit
from kernels.report.table import (
    CONSOLE_ROW,
    TIMING_PROPERTY,
    build,
    render_markdown,
    render_text,
    to_json,
    write_outputs,
)
from kernels.vm.console import Crash
from packetdrill.tolerance import TimingRecord, Tolerance

A, B, C = "t.py::test_a", "t.py::test_b", "t.py::test_c"


def _runs(tmp_path: Path) -> list[KernelRun]:
    good = KernelRun(
        name="bookworm-6.1",
        out_dir=tmp_path / "bookworm-6.1",
        kernel=BootableKernel("bookworm-6.1", "6.1.0-50-cloud-amd64", "6.1.176-1", Path("/k")),
        results=[
            TestResult(A, "pass", duration=1.5),
            TestResult(B, "xfail", "TCPWqueueTooBig: fixed in b617158dc096"),
            TestResult(C, "skip", "needs gre"),
        ],
        accel="tcg",
        boot_seconds=3.2,
        total_seconds=60.0,
    )
    crashed = KernelRun(
        name="sid",
        out_dir=tmp_path / "sid",
        results=[
            TestResult(A, "fail", "assert 1 == 2", "E   assert 1 == 2"),
            TestResult(B, "crash", "Kernel panic - not syncing", "...excerpt..."),
        ],
        problem=Crash(
            "Kernel panic - not syncing: sysrq triggered crash", "RIP: 0010:x\nCall Trace:"
        ),
    )
    return [good, crashed]


def test_cells_and_crash_filling(tmp_path: Path) -> None:
    matrix = build(_runs(tmp_path), [A, B, C])
    assert matrix.rows == [A, B, C, CONSOLE_ROW]
    outcomes = {(t, k): c.outcome for (t, k), c in matrix.cells.items()}
    assert outcomes[(A, "bookworm-6.1")] == "pass"
    assert outcomes[(C, "sid")] == "crash"  # never ran: its kernel had died
    assert outcomes[(CONSOLE_ROW, "bookworm-6.1")] == "pass"
    assert outcomes[(CONSOLE_ROW, "sid")] == "crash"
    assert {(t, k) for t, k, _ in matrix.unexpected()} == {
        (A, "sid"), (B, "sid"), (C, "sid"), (CONSOLE_ROW, "sid")}


def test_tests_only_a_guest_found_become_rows(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    runs[0].results.append(TestResult("t.py::test_guest_only", "pass"))
    assert "t.py::test_guest_only" in build(runs, [A]).rows


def test_renderings(tmp_path: Path) -> None:
    matrix = build(_runs(tmp_path), [A, B, C])
    text = render_text(matrix)
    assert "6.1.176-1" in text and "CRASH" in text and "FAIL" in text
    assert "RIP: 0010:x" in text  # the console excerpt is shown, not just "crashed"
    markdown = render_markdown(matrix)
    assert "| t.py::test_a | pass | FAIL |" in markdown
    # A known kernel difference names its commit in the cell; a plain xfail stays "xfail".
    assert "| t.py::test_b | xfail b617158dc096 | CRASH |" in markdown
    assert "## Unexpected" in markdown
    data = to_json(matrix)
    assert data["unexpected"] == 4
    tests = data["tests"]
    assert isinstance(tests, dict)
    assert tests[B]["bookworm-6.1"] == {
        "outcome": "xfail", "message": "TCPWqueueTooBig: fixed in b617158dc096"}


def test_all_green_says_so(tmp_path: Path) -> None:
    matrix = build(_runs(tmp_path)[:1], [A, B, C])
    assert not matrix.unexpected()
    assert "All results as expected." in render_markdown(matrix)


def test_outputs_and_junit_round_trip(tmp_path: Path) -> None:
    matrix = build(_runs(tmp_path), [A, B, C])
    written = write_outputs(matrix, tmp_path / "out")
    assert sorted(p.name for p in written) == [
        "junit-bookworm-6.1.xml", "junit-sid.xml", "matrix.html", "matrix.json", "matrix.md"]
    assert json.loads((tmp_path / "out/matrix.json").read_text())["unexpected"] == 4
    back = {r.nodeid: r for r in read_junit(tmp_path / "out/junit-sid.xml")}
    assert back[A].outcome == "fail" and back[A].message == "assert 1 == 2"
    assert back[C].outcome == "fail"  # a crash is a JUnit error, read back as a failure
    good = {r.nodeid: r.outcome for r in read_junit(tmp_path / "out/junit-bookworm-6.1.xml")}
    assert good == {A: "pass", B: "xfail", C: "skip", CONSOLE_ROW: "pass"}


def _report(when: Literal["setup", "call", "teardown"],
            outcome: Literal["passed", "failed", "skipped"],
            longrepr: str | tuple[str, int, str] | None = None, wasxfail: str = "") -> TestReport:
    report = TestReport(A, ("t.py", 1, "test_a"), {}, outcome, longrepr, when)
    if wasxfail:
        report.wasxfail = wasxfail
    return report


@pytest.mark.parametrize("reports, expected", [
    ([_report("setup", "passed"), _report("call", "passed")], ("pass", "")),
    ([_report("setup", "passed"), _report("call", "failed", "x\nE  assert 0")],
     ("fail", "E  assert 0")),
    ([_report("setup", "passed"), _report("call", "skipped", None, wasxfail="known")],
     ("xfail", "known")),
    ([_report("setup", "skipped", ("t.py", 1, "Skipped: no gre"))], ("skip", "Skipped: no gre")),
    ([_report("call", "passed"), _report("teardown", "failed", "leak")], ("fail", "leak")),
], ids=["pass", "fail", "xfail", "skip", "teardown-error"])  # fmt: skip
def test_progress_outcome_of_phase_reports(
    reports: list[TestReport], expected: tuple[str, str]
) -> None:
    assert progress_log.outcome_of(reports)[:2] == expected


def test_progress_log_blames_the_unfinished_test(tmp_path: Path) -> None:
    log = tmp_path / "progress.jsonl"
    progress_log.append(log, A, progress_log.STARTED)
    progress_log.append(log, A, "pass")
    progress_log.append(log, B, progress_log.STARTED)
    with log.open("a") as handle:
        handle.write('{"nodeid": "t.py::te')  # the panic cut the last write short
    finished, running = progress_log.read(log)
    assert finished == [TestResult(A, "pass")] and running == B
    assert progress_log.read(tmp_path / "absent.jsonl") == ([], None)


def test_widened_packetdrill_passes_are_distinct_cells_and_the_slack_is_shown(
        tmp_path: Path) -> None:
    """The guest's structured timing record (a JUnit user property), not console text."""
    tolerance = Tolerance().with_slack(22000, "calibrated")
    record = TimingRecord("widened", 12000, tolerance).to_json()
    runs = _runs(tmp_path)
    runs[0].results[0] = TestResult(A, "pass", properties=((TIMING_PROPERTY, record),))
    matrix = build(runs, [A, B, C])
    data: dict[str, Any] = to_json(matrix)
    assert [k["pkt tolerance"] for k in data["kernels"]] == [
        "+22.0 ms late (calibrated)", "-"]
    assert data["tests"][A]["bookworm-6.1"]["timing"]["late_usecs"] == 12000
    text = render_text(matrix)
    assert any(line.startswith(A) and " pass~ " in line for line in text.splitlines())
    assert "pass~: passed only with late-side timing slack" in text
    write_outputs(matrix, tmp_path / "out")
    back = {r.nodeid: r for r in read_junit(tmp_path / "out/junit-bookworm-6.1.xml")}
    assert back[A].properties == ((TIMING_PROPERTY, record),)
