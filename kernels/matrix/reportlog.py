# SPDX-License-Identifier: GPL-2.0-only
"""The guest's results on their way to the host: pytest-reportlog's file plus a started log.

Why pytest-reportlog: it writes every report pytest makes (setup, call and teardown of each
test; each collector) as one JSON line the moment it is made, flushed, in pytest's own
serialisation. The host turns the lines back into real reports through pytest's public hook
`pytest_report_from_serializable`, so a guest failure arrives as the traceback pytest itself
rendered (file, line, source, `E` lines), not as a string, and a panic in test 7 keeps tests
1-6.

Why a second file for starts: pytest-reportlog writes a test's first line when its setup is
over, so a kernel that dies during a setup (building a topology) would leave no trace of the
test that killed it; and its file is opened for writing, not appending, so a line added by
another handle would be overwritten. The guest plugin therefore appends the node id to
PROGRESS_LOG when a test starts, flushed; a started test with no teardown report in the report
log is the one the crash interrupted.
"""

import functools
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy
import pytest

from kernels.matrix.results import TestResult, from_collect_error, from_reports
from kernels.progress import Status

REPORT_LOG = "reports.jsonl"
PROGRESS_LOG = "progress.jsonl"


def pytest_args(out: str) -> list[str]:
    """The guest pytest's options: its report log in the output share `out`. The plugin is
    named (by its entry point's name, so an autoloaded copy is not registered twice): the log
    must be written even where plugin autoloading is off."""
    return ["-p", "pytest_reportlog", f"--report-log={out}/{REPORT_LOG}"]


def mark_started(path: Path, nodeid: str) -> None:
    """Guest side: one line per test start, flushed before the test can crash the kernel."""
    with path.open("a") as handle:
        handle.write(json.dumps(nodeid) + "\n")
        handle.flush()


@dataclass
class GuestLog:
    """What a guest's pytest reported. `running` is the test it started and never finished,
    `complete` whether its session ended (pytest-reportlog's last line)."""

    reports: dict[str, list[pytest.TestReport]] = field(default_factory=dict)
    collect_errors: list[pytest.CollectReport] = field(default_factory=list)
    running: str | None = None
    complete: bool = False

    def finished(self) -> dict[str, list[pytest.TestReport]]:
        """The tests whose teardown was reported (a test ends with it, even after a failure)."""
        return {nodeid: reports for nodeid, reports in self.reports.items()
                if any(report.when == "teardown" for report in reports)}  # fmt: skip

    def results(self) -> list[TestResult]:
        """The cells of the finished tests, after one per module the guest could not import."""
        return [*map(from_collect_error, self.collect_errors),
                *(from_reports(nodeid, r) for nodeid, r in self.finished().items())]  # fmt: skip


@functools.cache
def _standalone_hook() -> pluggy.HookRelay:
    """pytest's hooks outside a pytest session (the matrix is none): its plugin manager with
    the built-in `reports` plugin, which implements the (de)serialisation."""
    manager = pytest.PytestPluginManager()
    manager.import_plugin("reports")
    return manager.hook


def _lines(path: Path) -> Iterator[Any]:
    """The file's JSON lines; a line the crash cut short is skipped."""
    if not path.is_file():
        return
    for line in path.read_text(errors="replace").splitlines():
        try:
            yield json.loads(line)
        except ValueError:
            continue


def read(out_dir: Path, config: pytest.Config | None = None) -> GuestLog:
    """The guest's log in `out_dir`, deserialised by `config`'s hooks (a session's plugins
    take part) or, without a session, by pytest's own."""
    hook = config.hook if config is not None else _standalone_hook()
    log = GuestLog()
    for data in _lines(out_dir / REPORT_LOG):
        kind = data.get("$report_type") if isinstance(data, dict) else None
        if kind == "SessionFinish":
            log.complete = True
        if kind not in ("TestReport", "CollectReport"):
            continue  # SessionStart, WarningMessage
        report = hook.pytest_report_from_serializable(config=config, data=data)
        if isinstance(report.longrepr, list):
            # A skip's (file, line, reason) comes back from JSON as a list; every reporter
            # (junitxml asserts it) expects the tuple a local skip carries.
            report.longrepr = tuple(report.longrepr)
        if isinstance(report, pytest.TestReport):
            log.reports.setdefault(report.nodeid, []).append(report)
        elif isinstance(report, pytest.CollectReport) and report.failed:
            log.collect_errors.append(report)
    started = [nodeid for nodeid in _lines(out_dir / PROGRESS_LOG) if isinstance(nodeid, str)]
    if started and started[-1] not in log.finished():
        log.running = started[-1]
    return log


def _sizes(out_dir: Path) -> tuple[int, ...]:
    return tuple(p.stat().st_size if p.exists() else -1
                 for p in (out_dir / REPORT_LOG, out_dir / PROGRESS_LOG))  # fmt: skip


def follow(out_dir: Path, status: Status, stop: threading.Event, every: float = 1.0) -> None:
    """Report "running: N done, now <test>" whenever the guest's logs grow, until `stop`.

    Why: a suite takes minutes in a TCG guest; the matrix's live line (and CI's log) should say
    how far each kernel is, not only "running".
    """
    sizes, said = _sizes(out_dir), ""
    while not stop.wait(every):
        try:
            if _sizes(out_dir) == sizes:
                continue
            sizes = _sizes(out_dir)
        except OSError:
            continue
        log = read(out_dir)
        now = f", now {log.running.rpartition('/')[2]}" if log.running else ""
        if (line := f"running: {len(log.finished())} done{now}") != said:
            status(line)
            said = line
