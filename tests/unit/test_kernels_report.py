# SPDX-License-Identifier: GPL-2.0-only
"""The matrix report: cells, crash filling, renderings, the JUnit file per kernel."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from kernels.acquire.kernel import BootableKernel
from kernels.matrix.results import TestResult
from kernels.matrix.runner import KernelRun
from kernels.report import junit, record
from kernels.report.junit import NODEID_PROPERTY
from kernels.report.matrix_json import to_json
from kernels.report.model import CONSOLE_ROW, Matrix, build
from kernels.report.outputs import publish
from kernels.report.table import render_markdown, render_text
from kernels.vm.console import Crash
from packetdrill.timing import TIMING_PROPERTY, TimingRecord
from packetdrill.tolerance import Tolerance

A, B, C = "t.py::test_a", "t.py::test_b", "t.py::test_c"
STARTED = "2025-06-01T12:00:00+00:00"


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
        (A, "sid"),
        (B, "sid"),
        (C, "sid"),
        (CONSOLE_ROW, "sid"),
    }


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
        "outcome": "xfail",
        "message": "TCPWqueueTooBig: fixed in b617158dc096",
    }


def test_all_green_says_so(tmp_path: Path) -> None:
    matrix = build(_runs(tmp_path)[:1], [A, B, C])
    assert not matrix.unexpected()
    assert "All results as expected." in render_markdown(matrix)


def _junit(path: Path) -> dict[str, tuple[str, str]]:
    """node id -> (the case's verdict element, or "pass"; its message) in a written file."""
    cases = {}
    for case in ET.parse(path).iter("testcase"):
        nodeid = case.find(f"properties/property[@name='{NODEID_PROPERTY}']")
        verdict = next((e for e in case if e.tag in ("failure", "error", "skipped")), None)
        assert nodeid is not None
        cases[nodeid.get("value", "")] = (
            ("pass", "")
            if verdict is None
            else (verdict.get("type", verdict.tag), verdict.get("message", ""))
        )
    return cases


def _record(matrix: Matrix) -> record.Record:
    """The record a run of `matrix` keeps (what JUnit takes its timestamp from)."""
    kernels = [run.name for run in matrix.runs]
    return record.Record("0123456789ab", STARTED, "x86_64", (1, 1), kernels, matrix.rows[:-1])


def test_every_format_is_written_and_the_junit_file_per_kernel(tmp_path: Path) -> None:
    matrix = build(_runs(tmp_path), [A, B, C])
    written = publish(matrix, _record(matrix), tmp_path / "out")
    assert [p.name for p in written] == [
        "matrix.md", "matrix.json", "matrix.html", "junit-bookworm-6.1.xml", "junit-sid.xml",
        "ktap-bookworm-6.1.tap", "ktap-sid.tap", "runs.json",
    ]  # fmt: skip
    assert json.loads((tmp_path / "out/matrix.json").read_text())["unexpected"] == 4
    sid = _junit(tmp_path / "out/junit-sid.xml")
    assert sid[A] == ("failure", "assert 1 == 2")
    assert sid[C] == ("error", "Kernel panic - not syncing: sysrq triggered crash")  # a crash
    good = _junit(tmp_path / "out/junit-bookworm-6.1.xml")
    assert good == {
        A: ("pass", ""),
        B: ("pytest.xfail", "TCPWqueueTooBig: fixed in b617158dc096"),
        C: ("pytest.skip", "needs gre"),
        CONSOLE_ROW: ("pass", ""),
    }


def test_every_matrix_file_names_each_kernel_as_a_pytest_run_does(tmp_path: Path) -> None:
    """The matrix's JUnit, KTAP and HTML name a kernel by what `pytest --kernel` names it by
    (release, Debian package, accel); a kernel never fetched by its name alone."""
    matrix = build(_runs(tmp_path), [A, B, C])
    publish(matrix, _record(matrix), tmp_path / "out")
    words = "bookworm-6.1 6.1.0-50-cloud-amd64 (Debian package 6.1.176-1), in a VM, accel tcg"
    assert (tmp_path / "out/ktap-bookworm-6.1.tap").read_text().splitlines()[2] == (
        f"# netregress on {words}"
    )
    assert (tmp_path / "out/ktap-sid.tap").read_text().splitlines()[2] == "# netregress on sid"
    page = (tmp_path / "out/matrix.html").read_text()
    line = "<td>bookworm-6.1</td><td>6.1.0-50-cloud-amd64</td><td>6.1.176-1</td><td>tcg</td>"
    assert line in page


def test_a_junit_suite_names_its_kernel_and_its_cases_keep_pytests_classnames(
    tmp_path: Path,
) -> None:
    """What a CI's test-report view groups by (the suite: the kernel's name, properties, time)
    and what it follows a test by (classname and name, pytest's own for the same node id)."""
    runs = _runs(tmp_path)
    runs[0].results.append(TestResult("d/t.py::TestX::test_d[p-1]", "pass"))
    matrix = build(runs, [A, B])
    junit.write(matrix, _record(matrix), tmp_path)
    suite = ET.parse(tmp_path / "junit-bookworm-6.1.xml").getroot()
    assert (suite.get("name"), suite.get("time"), suite.get("timestamp")) == (
        "netregress on bookworm-6.1", "60.000", STARTED,
    )  # fmt: skip
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert properties == {
        "kernel": "bookworm-6.1",
        "accel": "tcg",
        "kernel_release": "6.1.0-50-cloud-amd64",
        "kernel_version": "6.1.176-1",
        "boot_seconds": "3.2",
    }
    cases = [(c.get("classname"), c.get("name")) for c in suite.iter("testcase")]
    assert cases[:2] == [("t", "test_a"), ("t", "test_b")]
    assert ("d.t.TestX", "test_d[p-1]") in cases
    dead = ET.parse(tmp_path / "junit-sid.xml").getroot()
    assert {p.get("name") for p in dead.findall("properties/property")} == {"kernel", "accel"}


def test_widened_packetdrill_passes_are_distinct_cells_and_the_slack_is_shown(
    tmp_path: Path,
) -> None:
    """The guest's structured timing record (a user property of its reports), not console text;
    the kernel's JUnit file carries it on."""
    tolerance = Tolerance().with_slack(22000, "calibrated")
    record = TimingRecord("widened", 12000, tolerance).to_json()
    runs = _runs(tmp_path)
    runs[0].results[0] = TestResult(A, "pass", properties=((TIMING_PROPERTY, record),))
    matrix = build(runs, [A, B, C])
    data: dict[str, Any] = to_json(matrix)
    assert [k["pkt tolerance"] for k in data["kernels"]] == ["+22.0 ms late (calibrated)", "-"]
    assert data["tests"][A]["bookworm-6.1"]["timing"]["late_usecs"] == 12000
    text = render_text(matrix)
    assert any(line.startswith(A) and " pass~ " in line for line in text.splitlines())
    assert "pass~: passed only with late-side timing slack" in text
    junit.write(matrix, _record(matrix), tmp_path)
    case = next(c for c in ET.parse(tmp_path / "junit-bookworm-6.1.xml").iter("testcase")
                if c.get("name") == "test_a")  # fmt: skip
    properties = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    assert (TIMING_PROPERTY, record) in properties
