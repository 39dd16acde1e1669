"""The guest's streaming result log: what finished before the kernel died.

Why besides JUnit: pytest writes JUnit only at the end of the session, so a panic in test 7
would lose tests 1–6. The guest plugin appends one JSON line when a test starts and one when
it ends, flushed at once through the (uncached) output share; after a crash the host keeps the
finished results and blames the test that started but never ended.
"""

import json
import threading
from pathlib import Path

from _pytest.reports import TestReport

from kernels.matrix.results import Outcome, TestResult
from kernels.progress import Status

STARTED = "started"


def append(
    path: Path, nodeid: str, outcome: Outcome | str, message: str = "", details: str = ""
) -> None:
    """Add one line and flush it, so it survives a guest panic right after."""
    entry = {"nodeid": nodeid, "outcome": outcome, "message": message, "details": details}
    with path.open("a") as handle:
        handle.write(json.dumps(entry) + "\n")
        handle.flush()


def outcome_of(reports: list[TestReport]) -> tuple[Outcome, str, str]:
    """(outcome, one-line why, long text) from a test's setup/call/teardown reports.

    A failure in any phase wins (a strict XPASS is a failed call); then an xfail or skip.
    """
    for report in reports:
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            text = report.longreprtext
            last = (text.strip().splitlines() or [""])[-1]
            message = crash.message if crash is not None else last
            return "fail", message.splitlines()[0] if message else "", text
    for report in reports:
        if report.skipped:
            if hasattr(report, "wasxfail"):
                return "xfail", str(report.wasxfail), ""
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            return "skip", reason, ""
    return "pass", "", ""


def read(path: Path) -> tuple[list[TestResult], str | None]:
    """(finished results, node id of the test that started but never finished, if any)."""
    finished: dict[str, TestResult] = {}
    running: str | None = None
    if not path.is_file():
        return [], None
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by the crash
        if entry["outcome"] == STARTED:
            running = entry["nodeid"]
        else:
            nodeid = entry["nodeid"]
            message, details = entry.get("message", ""), entry.get("details", "")
            finished[nodeid] = TestResult(nodeid, entry["outcome"], message, details)
            running = None
    return list(finished.values()), running


def follow(path: Path, status: Status, stop: threading.Event, every: float = 1.0) -> None:
    """Report "running: N done, now <test>" whenever the log grows, until `stop` is set.

    Why: a suite takes minutes in a TCG guest; the matrix's live line (and CI's log) should say
    how far each kernel is, not only "running".
    """
    size = 0
    while not stop.wait(every):
        try:
            if path.stat().st_size == size:
                continue
            size = path.stat().st_size
        except OSError:
            continue
        finished, running = read(path)
        now = f", now {running.rpartition('/')[2]}" if running else ""
        status(f"running: {len(finished)} done{now}")
