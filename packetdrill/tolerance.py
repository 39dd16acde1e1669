# SPDX-License-Identifier: GPL-2.0-only
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
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the result carries its Tolerance, so it imports this module
    from .result import RunResult

DEFAULT_USECS = 4000  # upstream's --tolerance_usecs default
DEFAULT_PERCENT = 12.5  # upstream's --tolerance_percent default
# The most lateness beyond the base tolerance a run may need and still count as a pass. The
# shortest kernel timer a script tells apart from "at once" is the 40 ms minimum delayed-ACK
# timer (TCP_DELACK_MIN); base 4 ms + 30 ms stays below it, so an ACK that waited for that timer
# still fails wherever the run is called a pass.
LATE_BOUND_USECS = 30_000
# What one step of the command line's --tolerance-scale adds on the late side: the widening
# the old symmetric scale gave the default base tolerance.
SCALE_STEP_USECS = DEFAULT_USECS

EARLY, LATE = "early", "late"
TIMING_PROPERTY = "packetdrill_timing"  # the user property a .pkt item records its record as


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

    def window(self, start: int, end: int, gap_usecs: int) -> tuple[int, int]:
        """The first and last instants at which an event due in ``start``..``end`` is on time:
        the base tolerance on the early side, base plus late slack on the late side."""
        base = self.base(gap_usecs)
        return start - base, end + base + self.late_slack_usecs

    def judge(self, start: int, end: int, actual: int, gap_usecs: int) -> tuple[str, int]:
        """(``early`` | ``late`` | ``""``, lateness beyond the base tolerance) of an event due
        in ``start``..``end`` that happened at ``actual`` (all script usecs)."""
        first, last = self.window(start, end, gap_usecs)
        if actual < first:
            return EARLY, 0
        late_by = max(0, actual - (last - self.late_slack_usecs))
        return (LATE if actual > last else ""), late_by

    def receive_timeout(self, gap_usecs: int) -> float:
        """Seconds to wait for an outbound packet due ``gap_usecs`` after the previous event:
        upstream's (the gap plus 2 s, in whole seconds) plus the late slack, so that a packet
        the slack would still accept is never reported missing first."""
        return int(gap_usecs / 1e6 + 2) + self.late_slack_usecs / 1e6

    def words(self, gap_usecs: int) -> str:
        """Upstream's ``tolerance T sec`` for a timing error, plus the late slack if any."""
        slack = self.late_slack_usecs
        return f"tolerance {self.base(gap_usecs) / 1e6:.6f} sec" + (
            f" (+{slack / 1e6:.6f} sec late slack)" if slack else ""
        )

    def with_slack(self, usecs: int, source: str) -> "Tolerance":
        return replace(self, late_slack_usecs=usecs, slack_from=source)

    def with_slack_of(self, policy: "Tolerance") -> "Tolerance":
        """This base rule with ``policy``'s late slack and its source (a runner's session
        policy meets a script's own base tolerance)."""
        return self.with_slack(policy.late_slack_usecs, policy.slack_from)

    def slack_options(self) -> list[tuple[str, str | None]]:
        """The late slack as our engine's command-line option (the only way it crosses into
        an engine process; the base travels in the script and its own options)."""
        slack = self.late_slack_usecs
        return [("tolerance_late_usecs", str(slack))] if slack else []

    def describe(self) -> str:
        slack = (
            f"late slack +{self.late_slack_usecs / 1000:.1f} ms ({self.slack_from})"
            if self.late_slack_usecs
            else "no late slack"
        )
        return (
            f"base {self.usecs} us / {self.percent:g}% ({self.base_from}), {slack}, "
            f"bound +{LATE_BOUND_USECS / 1000:.0f} ms"
        )


def slack_for_scale(scale: float) -> int:
    """Late slack of ``--tolerance-scale=F``: (F - 1) steps of the default base tolerance."""
    return max(0, round((scale - 1.0) * SCALE_STEP_USECS))


# Upstream's timing errors: a range ("+a~+b sec but happened at +c sec", relative or absolute)
# or a point ("at a sec but happened at c sec; tolerance t sec").
_RANGE = re.compile(
    r"timing error: expected (?P<what>.+?) in (?P<relative>relative )?time range "
    r"\+?(?P<a>[-\d.]+)~\+?(?P<b>[-\d.]+) sec but happened at \+?(?P<c>[-\d.]+) sec"
)
_POINT = re.compile(
    r"timing error: expected (?P<what>.+?) at (?P<a>[-\d.]+) sec but happened at "
    r"(?P<c>[-\d.]+) sec; tolerance (?P<t>[-\d.]+) sec"
)


def event_words(what: str, start_usecs: int, end_usecs: int) -> str:
    """An event and when the script wanted it, for a person reading a timing verdict:
    ``outbound packet expected at 0.300 s`` (or ``at 0.200~0.250 s``, script time)."""
    due = f"{start_usecs / 1e6:.3f}"
    if end_usecs != start_usecs:
        due += f"~{end_usecs / 1e6:.3f}"
    return f"{what} expected at {due} s"


def failing_event(message: str) -> str:
    """:func:`event_words` of the event a timing error (upstream's words, which both engines
    print) names; a relative range says so, since its base is not in the message."""
    point = _POINT.search(message)
    if point:
        at = round(float(point["a"]) * 1e6)
        return event_words(point["what"], at, at)
    found = _RANGE.search(message)
    if found is None:
        return ""
    a, b = (round(float(found[k]) * 1e6) for k in ("a", "b"))
    if not found["relative"]:
        return event_words(found["what"], a, b)
    return f"{found['what']} expected +{a / 1e6:.3f}~+{b / 1e6:.3f} s after the previous event"


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


# Why a run's timing is not checkable on this machine (TimingRecord.cause):
BEYOND_BOUND = "beyond-bound"  # accepted only with more lateness than a pass may rest on
WIDE_SLACK = "wide-slack"  # failed late where the machine needs more slack than the bound
SLACK_NOT_GIVEN = "slack-not-given"  # the binary, run without slack, failed within it
ENGINE_LATE = "engine-late"  # the engine itself injected, called or ran something late
ENGINE_BEHIND = "engine-behind"  # early only against an expectation our own lag pushed later
SWALLOWED = "swallowed"  # a negative script's late event, accepted by the slack


@dataclass(frozen=True)
class TimingRecord:
    """What one ``.pkt`` item reports about timing: the verdict, its numbers and the policy.

    ``verdict``: ``clean`` (within the base tolerance), ``widened`` (passed only thanks to the
    late slack), ``not-checkable`` (the machine is too slow to judge timing) or ``failed``.
    ``line`` and ``event`` name the event ``late_usecs`` is about (the latest accepted one, or
    the late failure the verdict rests on), ``cause`` why a not-checkable run is one: a
    person must be able to find the line and see why no verdict could rest on it.
    ``timing_error``: ``early`` / ``late`` when the run stopped on a timing check, so a report
    can tell a failure on timing alone from any other (KTAP's ``KSFT_MACHINE_SLOW``)."""

    verdict: str
    late_usecs: int
    tolerance: Tolerance
    bound_usecs: int = LATE_BOUND_USECS
    line: int | None = None
    event: str = ""
    cause: str = ""
    timing_error: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TimingRecord":
        """A record of this version or of one before ``line``/``event``/``cause``/
        ``timing_error`` existed (a kept report's)."""
        data = json.loads(text)
        return cls(
            data["verdict"],
            data["late_usecs"],
            Tolerance(**data["tolerance"]),
            data["bound_usecs"],
            data.get("line"),
            data.get("event", ""),
            data.get("cause", ""),
            data.get("timing_error", ""),
        )

    def summary(self) -> str:
        """The human words for the verdict, e.g. ``needed widening: +12.3 ms late``, or for a
        run too late to judge, which line was late, by how much, and why that blocks a
        verdict here."""
        late = f"+{self.late_usecs / 1000:.1f} ms late"
        if self.verdict == "widened":
            return f"needed widening: {late}"
        if self.verdict != "not-checkable":
            return ""
        where = (f"line {self.line}: " if self.line is not None else "") + (
            self.event or "an event"
        )
        if self.cause == ENGINE_BEHIND:
            return (
                f"timing not checkable on this machine: {where} came early only against an "
                f"expectation the engine itself pushed +{self.late_usecs / 1000:.1f} ms later: "
                "it acted late on the line before (this machine stalled), so a packet the "
                "kernel had already sent looked early, and the rest of the script was never "
                "checked"
            )
        return (
            f"timing not checkable on this machine: {where} happened {late}"
            + self._why_not_checkable()
        )

    def _why_not_checkable(self) -> str:
        """The reason clause of :meth:`summary`, starting with its punctuation."""
        tolerance = self.tolerance
        slack = (
            f"this machine's late-side slack (+{tolerance.late_slack_usecs / 1000:.1f} ms, "
            f"{tolerance.slack_from})"
        )
        bound = f"+{self.bound_usecs / 1000:.0f} ms"
        if self.cause == BEYOND_BOUND:
            return (
                f", accepted only by {slack}; a pass may rest on at most {bound} of lateness, "
                "beyond which a slow machine and a slow kernel look alike"
            )
        if self.cause == WIDE_SLACK:
            return (
                f"; {slack} is wider than the {bound} bound a verdict may rest on: on a "
                "machine this slow a late event may be the machine's as well as the kernel's, "
                "so it proves nothing"
            )
        if self.cause == SLACK_NOT_GIVEN:
            return (
                f", within {slack}; the upstream binary cannot be given that slack, so it "
                "stopped at this line and the rest of the script was never checked"
            )
        if self.cause == ENGINE_LATE:
            return (
                ": the engine itself acted late (this machine stalled), so the kernel got the "
                "script's stimulus late and the rest of the script was never checked"
            )
        if self.cause == SWALLOWED:
            return (
                f", and {slack} accepted it: the lateness this script must fail on is hidden "
                "here, so its expected failure cannot be checked"
            )
        return ""


def verdict_of_lateness(late_usecs: int) -> str:
    """``clean``, ``widened`` (up to the bound) or ``not-checkable`` for a run whose accepted
    events were ``late_usecs`` late at worst."""
    return (
        "clean"
        if late_usecs == 0
        else "widened"
        if late_usecs <= LATE_BOUND_USECS
        else "not-checkable"
    )


# The events the engine itself performs at their script time (upstream's words for them): when
# one of these is late, the engine woke up late - this machine stalled (a loaded host, a
# throttled VM) - and the kernel under test never saw the script's stimulus on time. A TCP
# timestamp off the script's clock by exactly the run's drift (errors.TimelineDrift) is the
# same stall, seen in the kernel's clock.
_ENGINE_EVENT = re.compile(
    r"timing error: expected (inbound packet|system call start|command|"
    r"data collection for code|TCP timestamp value|SO_TIMESTAMPING value) "
)


def late_by_the_engine(result: "RunResult") -> bool:
    """True when the run stopped because the engine, not the kernel, acted late."""
    return result.timing_error == LATE and bool(_ENGINE_EVENT.search(result.message))


def judge_lateness(result: "RunResult", tolerance: Tolerance) -> TimingRecord:
    """The verdict on how late a run's accepted events were (:func:`verdict_of_lateness`),
    naming the latest one: a pass, or a negative script's run, whatever else it did."""
    verdict = verdict_of_lateness(result.late_usecs)
    return TimingRecord(
        verdict,
        result.late_usecs,
        tolerance,
        line=result.late_line,
        event=result.late_event,
        cause=BEYOND_BOUND if verdict == "not-checkable" else "",
    )


def swallowed_by_the_slack(result: "RunResult", tolerance: Tolerance) -> TimingRecord:
    """A negative script about a late event that passed because the slack accepted its latest
    event (the plugin decides when that is so): not checkable, naming that event."""
    return TimingRecord(
        "not-checkable",
        result.late_usecs,
        tolerance,
        line=result.late_line,
        event=result.late_event,
        cause=SWALLOWED,
    )


def judge_run(result: "RunResult", tolerance: Tolerance) -> TimingRecord:
    """The policy applied to one run of a script that should pass.

    - passed within the base tolerance: ``clean``; passed using slack up to the bound:
      ``widened``; needing more than the bound: ``not-checkable`` (never a pass).
    - failed late while the slack exceeds the bound, or (upstream binary, which cannot be
      given late-only slack) failed late by no more than the slack: ``not-checkable``.
    - failed because the engine injected a packet or started a call late: ``not-checkable``,
      at any slack - the lateness is this machine's, the rest of the script was never checked,
      and the kernel did nothing wrong (found by ``scripts/soak`` under two busy loops: a
      15.5 ms late injection, after the session had calibrated no slack).
    - failed early only against an expectation counted from an action of the engine's that
      came late (``engine_behind_usecs``): ``not-checkable``; found in TCG guests, where the
      engine needs tens of ms between two lines and a packet the kernel sent before our late
      injection looked early by exactly that.
    - any other failure (early, non-timing, later than the measured slack): ``failed``.

    A not-checkable failure is about the failing event: the record names it (line and words
    from the message both engines print) with its own lateness.
    """
    if result.passed:
        return judge_lateness(result, tolerance)
    if result.timing_error == EARLY and result.engine_behind_usecs:
        return TimingRecord(
            "not-checkable",
            result.engine_behind_usecs,
            tolerance,
            line=result.line,
            event=failing_event(result.message),
            cause=ENGINE_BEHIND,
            timing_error=EARLY,
        )
    cause = _late_failure_proving_nothing(result, tolerance.late_slack_usecs)
    if not cause:
        return TimingRecord(
            "failed", result.late_usecs, tolerance, timing_error=result.timing_error
        )
    return TimingRecord(
        "not-checkable",
        result.late_error_usecs,
        tolerance,
        line=result.line,
        event=failing_event(result.message),
        cause=cause,
        timing_error=result.timing_error,
    )


def _late_failure_proving_nothing(result: "RunResult", slack: int) -> str:
    """Why a failed run's late event says nothing about the kernel (a cause), or ``""``."""
    if late_by_the_engine(result):
        return ENGINE_LATE
    if result.timing_error != LATE or not slack:
        return ""
    if slack > LATE_BOUND_USECS:
        return WIDE_SLACK
    return SLACK_NOT_GIVEN if result.late_error_usecs <= slack else ""
