"""The one timing-tolerance policy of a script run, shared by every backend and every report.

packetdrill checks each event's time against the script with a symmetric *base* tolerance:
``max(tolerance_usecs, tolerance_percent % of the gap since the previous event)``. That rule
is the upstream binary's and stays exactly as it is, on both sides.

A slow machine (an emulated guest, a loaded host) can only make events *late*: the engine wakes
up late to inject a packet, the kernel runs its code slowly. So the only widening we allow is
*late slack*: extra time after the latest acceptable instant, sized from a measurement of the
machine (:mod:`.calibrate`) or forced on the command line. It never scales the script's own
ranges and never moves the early edge: a retransmission that fires too soon fails on every
machine. Each run reports the worst lateness it saw beyond the base tolerance, so a pass that
needed the slack is shown as such, and lateness beyond :data:`LATE_BOUND_USECS` is reported as
"timing not checkable on this machine" instead of a pass (docs/timing-tolerance.md).
"""

import json
import re
from dataclasses import asdict, dataclass, replace

from .result import RunResult

DEFAULT_USECS = 4000         # upstream's --tolerance_usecs default
DEFAULT_PERCENT = 12.5       # upstream's --tolerance_percent default
# The most lateness beyond the base tolerance a run may need and still count as a pass. The
# shortest kernel timer a script tells apart from "at once" is the 40 ms minimum delayed-ACK
# timer (TCP_DELACK_MIN); base 4 ms + 30 ms stays below it, so an ACK that waited for that timer
# still fails wherever the run is called a pass.
LATE_BOUND_USECS = 30_000
# What one step of the command line's --tolerance-scale adds on the late side: the widening
# the old symmetric scale gave the default base tolerance.
SCALE_STEP_USECS = DEFAULT_USECS

EARLY, LATE = "early", "late"
TIMING_PROPERTY = "packetdrill_timing"   # the user property a .pkt item records its record as


@dataclass(frozen=True)
class Tolerance:
    """Base rule (``usecs``, ``percent``) plus ``late_slack_usecs``, and where each came from:
    ``base_from`` is default / script / command line, ``slack_from`` none / calibrated /
    command line."""

    usecs: int = DEFAULT_USECS
    percent: float = DEFAULT_PERCENT
    late_slack_usecs: int = 0
    base_from: str = "default"
    slack_from: str = "none"

    def base(self, gap_usecs: int) -> int:
        """The symmetric base tolerance for an event ``gap_usecs`` after the previous one."""
        return max(self.usecs, int(self.percent / 100.0 * gap_usecs))

    def judge(self, start: int, end: int, actual: int, gap_usecs: int) -> tuple[str, int]:
        """(``early`` | ``late`` | ``""``, lateness beyond the base tolerance) of an event due
        in ``start``..``end`` that happened at ``actual`` (all script usecs)."""
        base = self.base(gap_usecs)
        if actual < start - base:
            return EARLY, 0
        late_by = max(0, actual - end - base)
        return (LATE if late_by > self.late_slack_usecs else ""), late_by

    def with_slack(self, usecs: int, source: str) -> "Tolerance":
        return replace(self, late_slack_usecs=usecs, slack_from=source)

    def describe(self) -> str:
        slack = (f"late slack +{self.late_slack_usecs / 1000:.1f} ms ({self.slack_from})"
                 if self.late_slack_usecs else "no late slack")
        return (f"base {self.usecs} us / {self.percent:g}% ({self.base_from}), {slack}, "
                f"bound +{LATE_BOUND_USECS / 1000:.0f} ms")


def slack_for_scale(scale: float) -> int:
    """Late slack of ``--tolerance-scale=F``: (F - 1) steps of the default base tolerance."""
    return max(0, round((scale - 1.0) * SCALE_STEP_USECS))


# Upstream's timing errors: a range ("+a~+b sec but happened at +c sec", relative or absolute)
# or a point ("at a sec but happened at c sec; tolerance t sec").
_RANGE = re.compile(r"timing error: expected .*? time range \+?(?P<a>[-\d.]+)~\+?(?P<b>[-\d.]+) "
                    r"sec but happened at \+?(?P<c>[-\d.]+) sec")
_POINT = re.compile(r"timing error: expected .*? at (?P<a>[-\d.]+) sec but happened at "
                    r"(?P<c>[-\d.]+) sec; tolerance (?P<t>[-\d.]+) sec")


def classify_message(message: str, tolerance: Tolerance) -> tuple[str, int]:
    """(``early`` | ``late`` | ``""``, lateness) of a timing error in upstream's words.

    The range form does not print the tolerance; the base ``usecs`` is its lower bound, so the
    lateness derived from it is an upper bound (never an excuse for more than was late)."""
    point = _POINT.search(message)
    if point:
        a, c, t = (round(float(point[k]) * 1e6) for k in ("a", "c", "t"))
        return (EARLY, 0) if c < a else (LATE, max(0, c - a - t))
    found = _RANGE.search(message)
    if found:
        a, b, c = (round(float(found[k]) * 1e6) for k in ("a", "b", "c"))
        return (EARLY, 0) if c < a else (LATE, max(0, c - b - tolerance.usecs))
    return "", 0


@dataclass(frozen=True)
class TimingRecord:
    """What one ``.pkt`` item reports about timing: the verdict, its numbers and the policy.

    ``verdict``: ``clean`` (within the base tolerance), ``widened`` (passed only thanks to the
    late slack), ``not-checkable`` (the machine is too slow to judge timing) or ``failed``."""

    verdict: str
    late_usecs: int
    tolerance: Tolerance
    bound_usecs: int = LATE_BOUND_USECS

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TimingRecord":
        data = json.loads(text)
        return cls(data["verdict"], data["late_usecs"], Tolerance(**data["tolerance"]),
                   data["bound_usecs"])

    def summary(self) -> str:
        """The human words for the verdict, e.g. ``needed widening: +12.3 ms late``."""
        late = f"+{self.late_usecs / 1000:.1f} ms late"
        if self.verdict == "widened":
            return f"needed widening: {late}"
        if self.verdict == "not-checkable":
            return (f"timing not checkable on this machine: {late} beyond the base tolerance"
                    f" ({self.tolerance.describe()})")
        return ""


def verdict_of_lateness(late_usecs: int) -> str:
    """``clean``, ``widened`` (up to the bound) or ``not-checkable`` for a run whose accepted
    events were ``late_usecs`` late at worst."""
    return ("clean" if late_usecs == 0 else "widened" if late_usecs <= LATE_BOUND_USECS
            else "not-checkable")


# The events the engine itself performs at their script time (upstream's words for them): when
# one of these is late, the engine woke up late - this machine stalled (a loaded host, a
# throttled VM) - and the kernel under test never saw the script's stimulus on time.
_ENGINE_EVENT = re.compile(r"timing error: expected (inbound packet|system call start|command|"
                           r"data collection for code) ")


def late_by_the_engine(result: RunResult) -> bool:
    """True when the run stopped because the engine, not the kernel, acted late."""
    return result.timing_error == LATE and bool(_ENGINE_EVENT.search(result.message))


def judge_run(result: RunResult, tolerance: Tolerance) -> TimingRecord:
    """The policy applied to one run of a script that should pass.

    - passed within the base tolerance: ``clean``; passed using slack up to the bound:
      ``widened``; needing more than the bound: ``not-checkable`` (never a pass).
    - failed late while the slack exceeds the bound, or (upstream binary, which cannot be
      given late-only slack) failed late by no more than the slack: ``not-checkable``.
    - failed because the engine injected a packet or started a call late: ``not-checkable``,
      at any slack - the lateness is this machine's, the rest of the script was never checked,
      and the kernel did nothing wrong (found by ``scripts/soak`` under two busy loops: a
      15.5 ms late injection, after the session had calibrated no slack).
    - any other failure (early, non-timing, later than the measured slack): ``failed``.
    """
    late, slack = result.late_usecs, tolerance.late_slack_usecs
    if result.passed:
        verdict = verdict_of_lateness(late)
    elif late_by_the_engine(result) or (
            result.timing_error == LATE and slack and (slack > LATE_BOUND_USECS or
                                                       result.late_error_usecs <= slack)):
        verdict = "not-checkable"
        late = max(late, result.late_error_usecs)
    else:
        verdict = "failed"
    return TimingRecord(verdict, late, tolerance)
