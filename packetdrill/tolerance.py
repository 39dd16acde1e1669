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
"timing not checkable on this machine" instead of a pass (:mod:`.timing`,
docs/timing-tolerance.md).
"""

import re
from dataclasses import dataclass, replace

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
