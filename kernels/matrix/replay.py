# SPDX-License-Identifier: GPL-2.0-only
"""Replaying a guest run on the host (`pytest --kernel`): the guest's own reports, here.

Why replay and not a summary line: the host's reporters (-v, -rA, --junitxml, --ktap-file,
pytest-html, the terminal summary, the exit status) see every report exactly as the guest's
pytest made it, traceback and captured output included (kernels/matrix/reportlog.py brings them back
whole). A test the guest never finished (the kernel died) ends in a failure whose text is the
console excerpt.
"""

from collections.abc import Sequence
from typing import Literal

import pytest

from kernels.matrix import reportlog
from kernels.matrix.runner import KernelRun
from netregress.session import ARTIFACTS_PROPERTY, KERNEL_PROPERTY, folder_name


def _closing(
    item: pytest.Item, got: Sequence[pytest.TestReport], run: KernelRun
) -> list[pytest.TestReport]:
    """The reports that end a test the guest left unfinished: a failure where it stopped
    (before the call, or after it), wrapped in the phases it never reported."""
    problem = run.problem
    text = (
        f"kernel {run.name}: {problem.reason}\n{problem.excerpt}"
        if problem
        else f"kernel {run.name}: the guest reported no result for this test"
    )
    keywords: dict[str, Literal[1]] = dict.fromkeys(item.keywords, 1)

    def report(
        when: Literal["setup", "call", "teardown"],
        outcome: Literal["passed", "failed"],
        longrepr: str | None = None,
    ) -> pytest.TestReport:
        return pytest.TestReport(item.nodeid, item.location, keywords, outcome, longrepr, when)

    before_call = all(r.when == "setup" and r.passed for r in got)
    stopped: Literal["call", "teardown"] = "call" if before_call else "teardown"
    closing = [] if got else [report("setup", "passed")]
    closing.append(report(stopped, "failed", text))
    if stopped == "call":
        closing.append(report("teardown", "passed"))  # as locally (pytest-html waits for it)
    return closing


def replay(session: pytest.Session, run: KernelRun) -> None:
    """Feed the guest's reports of every selected item to this session's hooks, in order."""
    log = reportlog.read(run.out_dir, session.config)
    finished = log.finished()
    for item in session.items:
        got = log.reports.get(item.nodeid, [])
        reports = got if item.nodeid in finished else [*got, *_closing(item, got, run)]
        folder = run.out_dir / "artifacts" / folder_name(item.nodeid)  # the guest's evidence
        evidence = str(folder) if folder.is_dir() else ""
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in reports:
            report.user_properties = [*report.user_properties, (KERNEL_PROPERTY, run.name),
                                      (ARTIFACTS_PROPERTY, evidence)]  # fmt: skip
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        if session.shouldfail or session.shouldstop:
            break
    if run.problem is not None and all(item.nodeid in finished for item in session.items):
        # Every test reported, yet the console shows a splat (WARN/oops): still a failed run.
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("!", f"kernel {run.name}: {run.problem.reason}")
            reporter.write_line(run.problem.excerpt)
        session.testsfailed += 1
