# SPDX-License-Identifier: GPL-2.0-only
"""One test's result on one kernel: the cell of the matrix.

Why five outcomes: pass / fail / xfail / skip are pytest's own; "crash" marks a test whose
kernel died (panic, oops, hang, timeout) — a finding about the kernel, not about the test.
Why build cells from pytest's own reports: the guest's results come back as those reports
(kernels/matrix/reportlog.py), and `--ktap-file` sees the same ones, so both read them one way.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pytest

from packetdrill.timing import TIMING_PROPERTY, TimingRecord


class Outcome(StrEnum):
    """A cell's verdict. Its value is the word every machine-read output uses (matrix.json,
    runs.json, KCIDB's misc, JUnit's skip type), so a member reads and compares as that text."""

    PASS = "pass"
    FAIL = "fail"
    XFAIL = "xfail"
    SKIP = "skip"
    CRASH = "crash"


UNEXPECTED = frozenset({Outcome.FAIL, Outcome.CRASH})
# A kernel selftest item's sub-tests (kernels/selftests/): one line each, verdict, tab, name.
SUBTESTS_PROPERTY = "ksft_subtests"


@dataclass(frozen=True)
class TestResult:
    """`message` is the one-line why (skip/xfail reason, assertion); `details` the long text."""

    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    outcome: Outcome
    message: str = ""
    details: str = ""
    duration: float = 0.0
    # the guest item's user properties (name, JSON or text), e.g. its packetdrill timing record
    properties: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TestResult":
        """A result as `dataclasses.asdict` stored it in JSON (runs.json, a mutation
        campaign's stored results); an unknown outcome is a ValueError."""
        return cls(**(data | {"outcome": Outcome(data["outcome"])}))

    def subtests(self) -> list[tuple[str, str]]:
        """(verdict, name) of each sub-test a kernel selftest item reported, in order."""
        for name, value in self.properties:
            if name == SUBTESTS_PROPERTY:
                lines = [line.partition("\t") for line in value.splitlines()]
                return [(verdict, sub) for verdict, _, sub in lines if sub]
        return []

    def timing(self) -> TimingRecord | None:
        """The packetdrill timing record the guest's item attached as a user property, if any."""
        for name, value in self.properties:
            if name == TIMING_PROPERTY:
                return TimingRecord.from_json(value)
        return None


def _outcome(reports: Sequence[pytest.TestReport]) -> tuple[Outcome, str, str]:
    """(outcome, one-line why, long text): a failure in any phase wins (a strict XPASS is a
    failed call); then an xfail or a skip."""
    for report in reports:
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            text = report.longreprtext
            # Without a crash entry: pytest's own "E " line, else the text's first line (a
            # .pkt item's repr leads with its error; its last lines are pointers: the
            # script line, the pcap).
            lines = text.strip().splitlines() or [""]
            first = next((line for line in lines if line.startswith("E ")), lines[0])
            message = crash.message if crash is not None else first
            return Outcome.FAIL, message.splitlines()[0] if message else "", text
    for report in reports:
        if report.skipped:
            if hasattr(report, "wasxfail"):
                return Outcome.XFAIL, str(report.wasxfail), ""
            longrepr = report.longrepr  # (file, line, reason); a list once sent as JSON
            reason = longrepr[2] if isinstance(longrepr, tuple | list) else longrepr
            return Outcome.SKIP, str(reason), ""
    return Outcome.PASS, "", ""


def from_reports(nodeid: str, reports: Sequence[pytest.TestReport]) -> TestResult:
    """The cell for one test from its setup / call / teardown reports, with the time of all
    three (as JUnit counts it) and the item's user properties as text (the last report's list
    is complete: properties added during the call are there by teardown)."""
    properties = tuple(
        (str(name), str(value)) for name, value in (reports[-1].user_properties if reports else ())
    )
    duration = sum(report.duration for report in reports)
    return TestResult(nodeid, *_outcome(reports), duration, properties)


def from_collect_error(report: pytest.CollectReport) -> TestResult:
    """A module that failed to import: a failed test for every reader, not silence."""
    return TestResult(report.nodeid, Outcome.FAIL, "collection error", report.longreprtext)
