"""One test's result on one kernel: the cell of the matrix.

Why five outcomes: pass / fail / xfail / skip are pytest's own; "crash" marks a test whose
kernel died (panic, oops, hang, timeout) — a finding about the kernel, not about the test.
"""

from dataclasses import dataclass
from typing import Literal

Outcome = Literal["pass", "fail", "xfail", "skip", "crash"]
UNEXPECTED: frozenset[Outcome] = frozenset({"fail", "crash"})


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
