# SPDX-License-Identifier: GPL-2.0-only
"""One engine's verdict on one job, reduced to what conformance compares and reports.

Why reduce: the two engines word the same failure differently and print paths differently,
so the harness compares verdicts (PASS / FAIL / TIMEOUT / SKIP / CRASH) and keeps only the first
error line, path-free, to group disagreements by cause.
"""

import re
from dataclasses import dataclass

from packetdrill.result import RunResult

PASS, FAIL, TIMEOUT, SKIP, CRASH = "PASS", "FAIL", "TIMEOUT", "SKIP", "CRASH"
_LOCATED = re.compile(r"^(?:\S*/)?(?P<rest>[^/\s:]+:\d+: .*)$")
_TIMED_OUT = re.compile(r": timed out after \d+ s$", re.M)
_KILLED = re.compile(r": killed by signal \d+$")  # the adapter's note after the real error
# upstream's assert() (prints, then exits 1) and the builtin engine's last-resort report
_BROKE = re.compile(r"^assertion .+ failed at \S+ line \d+$|: internal engine error", re.M)
_KEEP_LINES = 40


@dataclass
class Outcome:
    verdict: str
    first_error: str = ""
    seconds: float = 0.0
    message: str = ""  # the diagnostic's first lines, paths as the engine printed them

    @property
    def passed(self) -> bool:
        return self.verdict == PASS


def first_error(message: str) -> str:
    """The first ``file:line: text`` line (directory dropped), else the last non-empty line:
    an unlocated fatal error (an assertion, a timeout, an exception) comes after whatever
    warnings the script's init commands printed first."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        located = _LOCATED.match(line)
        if located:
            return located.group("rest")
    fatal = [line for line in lines if not _KILLED.search(line)] or lines
    return _drop_dirs(fatal[-1]) if fatal else ""


def _drop_dirs(line: str) -> str:
    return re.sub(r"(?:/[^/\s:]+)+/([^/\s:]+)", r"\1", line)


def from_result(result: RunResult) -> Outcome:
    if result.passed:
        return Outcome(PASS, seconds=round(result.duration, 3))
    message = result.message or result.stderr or f"exit status {result.exit_status}"
    # Killed by a signal, or an internal assertion: the program broke, it gave no verdict.
    verdict = (
        CRASH
        if result.exit_status < 0 or _BROKE.search(message)
        else TIMEOUT
        if _TIMED_OUT.search(message)
        else FAIL
    )
    kept = "\n".join(message.splitlines()[:_KEEP_LINES])
    return Outcome(verdict, first_error(message), round(result.duration, 3), kept)


def cause(outcome: Outcome) -> str:
    """The group key of a failure: its first error without script name, line and numbers, so
    the same engine problem in many scripts lands in one group."""
    text = re.sub(r"^[^\s:]+:\d+: ", "", outcome.first_error or outcome.verdict)
    text = re.sub(r"\b0x[0-9a-fA-F]+\b", "N", text)
    return re.sub(r"(?<![A-Za-z_])\d+(?:\.\d+)?", "N", text)
