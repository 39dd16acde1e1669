# SPDX-License-Identifier: GPL-2.0-only
"""A selftest script's output read as sub-test results, each with the tool and feature
troubles its own commands met.

Why sub-tests: one script checks dozens of things (``fib_tests.sh`` ~200), and its exit code
says only that one of them failed; a report must name which. The scripts print a result in
one of three shapes: KTAP/TAP (``ok 3 name``, ``not ok 4 name # SKIP why``), the
``TEST: name [ OK ]`` lines of lib.sh's ``log_test`` and of most older scripts (``[FAIL]``,
``[SKIP]``, ``[XFAIL]``), and ``PASS: name`` / ``FAIL: name`` lines (rtnetlink.sh's
``end_test``).

Why troubles per sub-test: a check fails when one of its commands does, and that command may
have failed for a reason that is not the kernel's: an iproute2 too old for the corpus
(``Garbage instead of arguments``), or a kernel built without a link type (``Unknown device
type``). The command wrappers (``iproute2.sh``) write each such failure to a log as it
happens; the runner notes the log's length as it reads each result line, so the troubles
logged since the previous result are this result's. A failure with a trouble is a skip naming
it, never a kernel failure.
"""

import re
from dataclasses import dataclass, field
from enum import StrEnum

LINK_TYPE = "link-type\t"  # a trouble log line's kind: the kernel refused a link type


class Verdict(StrEnum):
    """A sub-test's verdict, as the kselftest runner words them."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    XFAIL = "xfail"


_TEST_LINE = re.compile(r"^\s*TEST: (?P<name>.*?)\s*\[\s*(?P<word>OK|FAIL|SKIP|XFAIL)\s*\]\s*$")
_KTAP_LINE = re.compile(
    r"^\s*(?P<not>not )?ok \d+(?: -)? (?P<name>.*?)\s*(?:#\s*(?P<directive>SKIP|XFAIL|TODO)\b.*)?$"
)
_NOT_FOUND = re.compile(r"(?:^|: )(?P<program>[\w.+-]+): (?:command )?not found\s*$")
# A helper object the script needs and the build left out ("Missing lib/xdp_dummy.bpf.o").
_MISSING_OBJECT = re.compile(r"(?:[Mm]issing|No such file).*?(?P<file>[\w./-]+\.o)\b")
_WORD_LINE = re.compile(r"^(?P<word>PASS|FAIL|SKIP): (?P<name>.+?)\s*$")
_WORDS = {
    "OK": Verdict.PASS,
    "PASS": Verdict.PASS,
    "FAIL": Verdict.FAIL,
    "SKIP": Verdict.SKIP,
    "XFAIL": Verdict.XFAIL,
    "TODO": Verdict.XFAIL,
}


@dataclass(frozen=True)
class SubResult:
    """One check a script reported, and the troubles its commands met (wrapper log lines)."""

    name: str
    verdict: Verdict
    troubles: tuple[str, ...] = field(default=())

    @property
    def blamed_elsewhere(self) -> str:
        """Why this failure is not the kernel's ("" if it is): the first trouble."""
        return self.troubles[0] if self.verdict == Verdict.FAIL and self.troubles else ""


def parse_line(line: str) -> tuple[str, Verdict] | None:
    """(name, verdict) if `line` reports a sub-test, else None."""
    if found := _TEST_LINE.match(line):
        return found["name"], _WORDS[found["word"]]
    if found := _KTAP_LINE.match(line):
        if found["directive"]:
            return found["name"], _WORDS[found["directive"]]
        return found["name"], Verdict.FAIL if found["not"] else Verdict.PASS
    if found := _WORD_LINE.match(line):
        return found["name"], _WORDS[found["word"]]
    return None


def sub_results(lines: list[tuple[str, int]], troubles: str) -> tuple[list[SubResult], list[str]]:
    """The sub-tests of a run's output, and the troubles no result claimed (logged after the
    last result line: the script's own set-up or end).

    `lines` are the output's lines, each with the length the trouble log had when the line
    was read; `troubles` is that log's text. A program the shell could not find (``x:
    command not found`` in the output), or a helper object the build left out, is a trouble of
    the result after it too. A link type
    the kernel refused stays a trouble of every later result: the script built its topology
    without that device, and whatever fails after is not judged."""
    results: list[SubResult] = []
    claimed = 0
    missing: list[str] = []
    sticky: list[str] = []
    for line, logged in lines:
        parsed = parse_line(line)
        if parsed is None:
            if found := _NOT_FOUND.search(line):
                missing.append(f"missing\t{found['program']}\t")
            elif found := _MISSING_OBJECT.search(line):
                missing.append(f"missing\t{found['file']}\t")
            continue
        segment = _log_lines(troubles[claimed:logged])
        mine = list(dict.fromkeys(segment + missing + sticky))
        sticky += [trouble for trouble in segment if trouble.startswith(LINK_TYPE)]
        claimed, missing = max(claimed, logged), []
        results.append(SubResult(parsed[0], parsed[1], tuple(mine)))
    return results, _log_lines(troubles[claimed:]) + missing


def _log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]
