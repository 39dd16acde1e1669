"""Replaying a guest run as ordinary pytest reports on the host (`pytest --kernel`).

Why replay instead of a summary line: -v, -rA, --junitxml, the terminal summary and the exit
status then work exactly as for a local run; a test the guest never finished (the kernel died)
becomes a failure whose text is the console excerpt.
"""

from typing import Literal

import pytest
from _pytest.reports import TestReport

from evidence.report_html import ARTIFACTS_PROPERTY
from kernels.matrix.results import TestResult
from kernels.matrix.runner import KernelRun
from netns.artifacts import folder_name

# One phase report as TestReport takes it: (when, outcome, longrepr, wasxfail).
_Phase = tuple[Literal["setup", "call", "teardown"], Literal["passed", "failed", "skipped"],
               str | tuple[str, int, str] | None, str]


def _phases(result: TestResult | None, run: KernelRun) -> list[_Phase]:
    """(when, outcome, longrepr, wasxfail) reports that tell pytest what happened in the guest."""
    if result is None or result.outcome == "crash":
        problem = run.problem
        text = (
            f"kernel {run.name}: {problem.reason}\n{problem.excerpt}"
            if problem
            else f"kernel {run.name}: the guest reported no result for this test"
        )
        return [("setup", "passed", None, ""), ("call", "failed", text, "")]
    match result.outcome:
        case "pass":
            return [("setup", "passed", None, ""), ("call", "passed", None, "")]
        case "fail":
            text = result.details or result.message
            return [("setup", "passed", None, ""), ("call", "failed", text, "")]
        case "xfail":
            return [("setup", "passed", None, ""), ("call", "skipped", None, result.message)]
        case _:
            return [("setup", "skipped", ("", 0, f"Skipped: {result.message}"), "")]


def _evidence(run: KernelRun, result: TestResult | None) -> str:
    """The guest's artifact folder for this test (named after the guest's node id)."""
    return str(run.out_dir / "artifacts" / folder_name(result.nodeid)) if result else ""


def replay(session: pytest.Session, run: KernelRun) -> None:
    by_id = {result.nodeid: result for result in run.results}
    for item in session.items:
        result = by_id.get(item.nodeid)
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        # A teardown report closes each test, as in a local run (pytest-html waits for it).
        teardown: _Phase = ("teardown", "passed", None, "")
        for when, outcome, longrepr, wasxfail in [*_phases(result, run), teardown]:
            report = TestReport(
                item.nodeid,
                item.location,
                {name: 1 for name in item.keywords},
                outcome,
                longrepr,
                when,
                duration=result.duration if result and when == "call" else 0.0,
                user_properties=[("kernel", run.name), *(result.properties if result else ()),
                                 (ARTIFACTS_PROPERTY, _evidence(run, result))],
            )
            if wasxfail:
                report.wasxfail = wasxfail
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        if session.shouldfail or session.shouldstop:
            break
    if run.problem is not None and all(item.nodeid in by_id for item in session.items):
        # Every test reported, yet the console shows a splat (WARN/oops): still a failed run.
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("!", f"kernel {run.name}: {run.problem.reason}")
            reporter.write_line(run.problem.excerpt)
        session.testsfailed += 1
