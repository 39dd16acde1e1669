# SPDX-License-Identifier: GPL-2.0-only
"""The timing verdict of one run: :class:`TimingRecord`, and the policy that gives it.

A run is judged by its :class:`~.tolerance.Tolerance` and what it reports about lateness
(:class:`~.result.RunResult`): a pass within the base tolerance is ``clean``, one that needed
the late slack ``widened``, and a run whose verdict would rest on more lateness than
:data:`~.tolerance.LATE_BOUND_USECS` (or on the engine's own lateness) is ``not-checkable``,
never a pass (docs/timing-tolerance.md). Reports read the record back from the
:data:`TIMING_PROPERTY` user property of a ``.pkt`` item.
"""

import json
import re
from dataclasses import asdict, dataclass

from .result import RunResult
from .tolerance import EARLY, LATE, LATE_BOUND_USECS, Tolerance, failing_event

TIMING_PROPERTY = "packetdrill_timing"  # the user property a .pkt item records its record as

# Why a run's timing is not checkable on this machine (TimingRecord.cause):
BEYOND_BOUND = "beyond-bound"  # accepted only with more lateness than a pass may rest on
WIDE_SLACK = "wide-slack"  # failed late where the machine needs more slack than the bound
SLACK_NOT_GIVEN = "slack-not-given"  # the binary, run without slack, failed within it
ENGINE_LATE = "engine-late"  # the engine itself injected, called or ran something late
ENGINE_BEHIND = "engine-behind"  # early only against an expectation our own lag pushed later
ENGINE_DELAYED = "engine-delayed"  # late only by our own lag since its expectation was counted
OVERTAKEN = "overtaken"  # a wrong packet the kernel sent before our late stimulus reached it
TIMED_CODE = "timed-code"  # a code block's assertion on a time the kernel measured, slack-late

# tcp_info fields that are times the kernel measured across the run's events: an assertion on
# one inherits every lateness the slack let through (kernel's tcp-info-sndbuf-limited.pkt in
# TCG guests: tcpi_busy_time 56-60 ms where 49-52 is allowed, under both engines).
_DURATIONS = frozenset(
    {
        "tcpi_busy_time", "tcpi_rwnd_limited", "tcpi_sndbuf_limited", "tcpi_rtt",
        "tcpi_rttvar", "tcpi_min_rtt", "tcpi_rcv_rtt", "tcpi_last_data_recv",
        "tcpi_last_data_sent", "tcpi_last_ack_recv", "tcpi_total_rto_time",
    }
)  # fmt: skip
_CODE_LINE = re.compile(r":(\d+): error in Python code$", re.M)
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
        if self.cause == ENGINE_DELAYED:
            return (
                f"timing not checkable on this machine: {where} came late only by the "
                f"engine's own lag: it acted +{self.late_usecs / 1000:.1f} ms late on the lines "
                "before (this machine stalled), so the kernel got the script's stimulus that "
                "late; counted from then, the event was on time, and the rest of the script "
                "was never checked"
            )
        if self.cause == TIMED_CODE:
            return (
                f"timing not checkable on this machine: {where}: it asserts on a time the "
                "kernel measured across this run's events, which came up to "
                f"+{self.late_usecs / 1000:.1f} ms beyond the base tolerance (accepted only by "
                "the late-side slack, "
                f"+{self.tolerance.late_slack_usecs / 1000:.1f} ms): that lateness is in the "
                "time, so the assertion cannot be judged here"
            )
        if self.cause == OVERTAKEN:
            return (
                f"timing not checkable on this machine: {where}: the kernel sent it before a "
                "packet or call of ours that the script has it receive first, which the "
                f"engine made +{self.late_usecs / 1000:.1f} ms late (this machine stalled): "
                "the kernel answered a state the script never set up, and the rest of the "
                "script was never checked"
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


def late_by_the_engine(result: RunResult) -> bool:
    """True when the run stopped because the engine, not the kernel, acted late."""
    return result.timing_error == LATE and bool(_ENGINE_EVENT.search(result.message))


def judge_lateness(result: RunResult, tolerance: Tolerance) -> TimingRecord:
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


def swallowed_by_the_slack(result: RunResult, tolerance: Tolerance) -> TimingRecord:
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
    - failed early only against an expectation counted from an action of the engine's that
      came late (``engine_behind_usecs``): ``not-checkable``; found in TCG guests, where the
      engine needs tens of ms between two lines and a packet the kernel sent before our late
      injection looked early by exactly that.
    - failed late only by the engine's own lag since the event's expectation was counted
      (``engine_behind_usecs`` of a late error: a blocking call's return or an absolute time
      after an injection of ours that came late): ``not-checkable``; found in a TCG guest,
      where ``connect()`` returned 38 ms after its script time because our SYN-ACK left 19 ms
      after the SYN it answered.
    - failed on a packet the kernel sent before a stimulus of ours the script has it receive
      first, which the engine made late (``overtaken_usecs``): ``not-checkable``; found in a
      TCG guest, where checking twelve packets of a burst took our engine 26 ms, and the
      kernel's tail loss probe left before the ACKs the script sends 1 ms apart.
    - failed in a code block asserting on a time the kernel measured (``tcpi_busy_time`` ...)
      in a run whose events passed only on the late slack (``late_usecs``): ``not-checkable``.
    - any other failure (early, non-timing, later than the measured slack): ``failed``.

    A not-checkable failure is about the failing event: the record names it (line and words
    from the message both engines print) with its own lateness.
    """
    if result.passed:
        return judge_lateness(result, tolerance)
    cause = _late_failure_proving_nothing(result, tolerance.late_slack_usecs)
    usecs = result.late_error_usecs
    if result.engine_behind_usecs and cause != ENGINE_LATE:
        cause = ENGINE_BEHIND if result.timing_error == EARLY else ENGINE_DELAYED
        usecs = result.engine_behind_usecs
    elif result.overtaken_usecs and not result.timing_error:
        cause, usecs = OVERTAKEN, result.overtaken_usecs
    elif not result.timing_error and result.late_usecs and (timed := timed_code(result)):
        line, field = timed
        return TimingRecord(
            "not-checkable",
            result.late_usecs,
            tolerance,
            line=line,
            event=f"code block on {field}",
            cause=TIMED_CODE,
        )
    if not cause:
        return TimingRecord(
            "failed", result.late_usecs, tolerance, timing_error=result.timing_error
        )
    return TimingRecord(
        "not-checkable",
        usecs,
        tolerance,
        line=result.line,
        event=failing_event(result.message) or ("outbound packet" if cause == OVERTAKEN else ""),
        cause=cause,
        timing_error=result.timing_error,
    )


def timed_code(result: RunResult) -> tuple[int | None, str] | None:
    """(line, field) of a failed code block's assertion on a time the kernel measured, read
    from its traceback (the innermost frame's source line, which both engines print), or
    None: another failure, or an assertion on anything else (a cwnd, a counter)."""
    if "error executing code" not in result.message:
        return None
    lines = result.stderr.splitlines()
    frames = [i for i, text in enumerate(lines) if text.lstrip().startswith('File "')]
    if not frames or frames[-1] + 1 >= len(lines):
        return None
    fields = sorted(set(re.findall(r"\btcpi_\w+", lines[frames[-1] + 1])) & _DURATIONS)
    if not fields:
        return None
    found = _CODE_LINE.search(result.stderr)
    return (int(found.group(1)) if found else None), fields[0]


def _late_failure_proving_nothing(result: RunResult, slack: int) -> str:
    """Why a failed run's late event says nothing about the kernel (a cause), or ``""``."""
    if late_by_the_engine(result):
        return ENGINE_LATE
    if result.timing_error != LATE or not slack:
        return ""
    if slack > LATE_BOUND_USECS:
        return WIDE_SLACK
    return SLACK_NOT_GIVEN if result.late_error_usecs <= slack else ""
