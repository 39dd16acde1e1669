# SPDX-License-Identifier: GPL-2.0-only
"""Guest results through pytest-reportlog: a cell from pytest's own reports, and a pytest that
dies mid-test (as under a kernel panic) keeps the tests it finished and blames the running one.

The crash runs for real on the running kernel (the matrix's `running` column, `pytest --kernel
running`: same runner, same guest contract and replay, no VM): the demo's third test SIGKILLs
its own pytest, which then writes nothing more, exactly what a panicked guest leaves behind.
The traceback's journey through a real VM: test_kernels_vm.py.
"""

import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Literal

import pytest

from kernels.acquire.catalog import RunningKernel
from kernels.matrix import reportlog
from kernels.matrix.results import from_reports
from kernels.matrix.runner import RunOptions, run_kernel
from kernels.vm.procs import Children
from kernels.vm.qemu import InitramfsLauncher

DEMO = """
import os
import signal


def twice(value):
    return value * 2


def test_passes():
    pass


def test_fails():
    half = 21
    assert twice(half) == 43, "a real failure"


def test_dies():
    os.kill(os.getpid(), signal.SIGKILL)


def test_never_runs():
    pass
"""


def _report(when: Literal["setup", "call", "teardown"],
            outcome: Literal["passed", "failed", "skipped"], longrepr: Any = None,
            **extra: Any) -> pytest.TestReport:  # fmt: skip
    return pytest.TestReport("t.py::test_a", ("t.py", 1, "test_a"), {}, outcome, longrepr, when,
                             **extra)  # fmt: skip


@pytest.mark.parametrize("reports, expected", [
    ([_report("setup", "passed"), _report("call", "passed")], ("pass", "")),
    ([_report("setup", "passed"), _report("call", "failed", "x\nE  assert 0")],
     ("fail", "E  assert 0")),
    ([_report("setup", "passed"), _report("call", "skipped", None, wasxfail="known")],
     ("xfail", "known")),
    ([_report("setup", "skipped", ("t.py", 1, "Skipped: no gre"))], ("skip", "Skipped: no gre")),
    ([_report("setup", "skipped", ["t.py", 1, "Skipped: no gre"])], ("skip", "Skipped: no gre")),
    ([_report("call", "passed"), _report("teardown", "failed", "leak")], ("fail", "leak")),
    ([_report("call", "failed", "s.pkt:5: error handling packet: bad ack\nscript line: 5\n"
                                "pcap: /tmp/s.pcap")],
     ("fail", "s.pkt:5: error handling packet: bad ack")),
], ids=["pass", "fail", "xfail", "skip", "skip-from-json", "teardown-error", "pkt"])  # fmt: skip
def test_cell_from_phase_reports(
    reports: list[pytest.TestReport], expected: tuple[str, str]
) -> None:
    result = from_reports("t.py::test_a", reports)
    assert (result.outcome, result.message) == expected


def test_a_dead_pytest_keeps_what_finished_and_blames_the_running_test(tmp_path: Path) -> None:
    (tmp_path / "test_demo.py").write_text(DEMO)
    out = tmp_path / "out"
    children = Children()
    try:
        run = run_kernel(
            RunningKernel("running"),
            RunOptions(["test_demo.py"], cwd=tmp_path),
            out,
            InitramfsLauncher(children),
            children,
            lambda message: None,
        )
    finally:
        children.stop_all()
    assert run.problem is not None
    assert run.problem.reason == f"pytest did not finish (exit status {-signal.SIGKILL})"
    cells = {r.nodeid: r for r in run.results}
    assert {nodeid: r.outcome for nodeid, r in cells.items()} == {
        "test_demo.py::test_passes": "pass",
        "test_demo.py::test_fails": "fail",
        "test_demo.py::test_dies": "crash",
    }  # test_never_runs: no cell of its own; the matrix fills it in as a crash
    failed = cells["test_demo.py::test_fails"]
    assert failed.message == "AssertionError: a real failure"
    assert ">       assert twice(half) == 43" in failed.details  # pytest's own rendering
    assert "E        +  where 42 = twice(21)" in failed.details
    assert "test_demo.py:16: AssertionError" in failed.details
    log = reportlog.read(out)
    assert not log.complete and log.running == "test_demo.py::test_dies"


def test_pytest_kernel_replays_the_guest_reports_and_pins_the_crash(tmp_path: Path) -> None:
    """The host session's own report log (what its reporters saw) holds the guest's failure
    as pytest rendered it there, the killed test as the crash, and the lost test too."""
    (tmp_path / "test_demo.py").write_text(DEMO)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "kernels.pytest_plugin", "--kernel", "running",
         "test_demo.py", "-p", "no:cacheprovider", *reportlog.pytest_args(str(tmp_path / "host"))],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "E        +  where 42 = twice(21)" in proc.stdout.splitlines()
    host = reportlog.read(tmp_path / "host")
    assert host.complete
    cells = {r.nodeid.rpartition("::")[2]: r for r in host.results()}
    assert {name: r.outcome for name, r in cells.items()} == {
        "test_passes": "pass",
        "test_fails": "fail",
        "test_dies": "fail",
        "test_never_runs": "fail",
    }
    assert cells["test_fails"].message == "AssertionError: a real failure"
    assert "test_demo.py:16: AssertionError" in cells["test_fails"].details
    died = f"kernel running: pytest did not finish (exit status {-signal.SIGKILL})"
    assert all(cells[name].details.startswith(died) for name in ("test_dies", "test_never_runs"))


def test_a_line_cut_short_by_the_crash_is_skipped(tmp_path: Path) -> None:
    reportlog.mark_started(tmp_path / reportlog.PROGRESS_LOG, "t.py::test_a")
    with (tmp_path / reportlog.PROGRESS_LOG).open("a") as handle:
        handle.write('"t.py::te')  # the panic cut the last write short
    (tmp_path / reportlog.REPORT_LOG).write_text('{"pytest_version": "9", "$report_type": "Sess')
    log = reportlog.read(tmp_path)
    assert (log.reports, log.complete, log.running) == ({}, False, "t.py::test_a")
    assert reportlog.read(tmp_path / "absent") == reportlog.GuestLog()


EVERY_OUTCOME = """
import pytest


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup broke")


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")


def test_pass():
    print("to stdout")


def test_fail():
    assert 1 == 2


def test_skip():
    pytest.skip("no gre here")


@pytest.mark.skip(reason="marked away")
def test_skip_mark():
    pass


@pytest.mark.xfail(reason="known bug", strict=True)
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="oracle proof", strict=True)
def test_xpass_strict():
    pass


def test_setup_error(broken_setup):
    pass


def test_teardown_error(broken_teardown):
    pass
"""


def _junit_cases(path: Path) -> dict[tuple[str, str], tuple[str, ...]]:
    """(classname, name) of each testcase → the kinds of its child elements and their
    messages (no times)."""
    cases: dict[tuple[str, str], tuple[str, ...]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = tuple(
            f"{child.tag}:{child.get('type', '')}:{child.get('message', '')}"
            for child in case if child.tag not in ("system-out", "system-err", "properties")
        )  # fmt: skip
        cases[(case.get("classname", ""), case.get("name", ""))] = kinds
    return cases


def test_a_replayed_run_reads_like_a_local_one_to_every_reporter(tmp_path: Path) -> None:
    """`pytest --kernel ... --junitxml` (what every CI passes): each outcome, skips and errors
    included, reaches JUnit (under the same classnames), pytest-html and the report log as the
    local run's did, and the session ends with the same exit status; the JUnit suite names the
    kernel."""
    (tmp_path / "test_all.py").write_text(EVERY_OUTCOME)
    common = ["test_all.py", "-p", "no:cacheprovider", "-q"]
    runs = {}
    replayed = ["-p", "kernels.pytest_plugin", "--kernel", "running"]
    for name, extra in (("local", []), ("replayed", replayed)):
        out = tmp_path / name
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", *extra, *common, f"--junitxml={out}/junit.xml",
             f"--html={out}/report.html", *reportlog.pytest_args(str(out))],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert "INTERNALERROR" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        runs[name] = (proc.returncode, _junit_cases(out / "junit.xml"), (out / "report.html"))
    assert runs["replayed"][0] == runs["local"][0] == 1
    assert runs["replayed"][1] == runs["local"][1]
    assert len(runs["local"][1]) == 8
    suite = ET.parse(tmp_path / "replayed/junit.xml").find("testsuite")
    assert suite is not None and suite.get("name") == "netregress on running"
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert properties == {"kernel": "running", "accel": "host",
                          "kernel_release": os.uname().release,
                          "kernel_version": properties["kernel_version"],
                          "host": properties["host"]}  # fmt: skip
    assert runs["replayed"][2].is_file()
    local, again = (
        {r.nodeid: (r.outcome, r.message) for r in reportlog.read(tmp_path / name).results()}
        for name in ("local", "replayed")
    )
    assert again == local
