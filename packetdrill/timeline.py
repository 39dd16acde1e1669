# SPDX-License-Identifier: GPL-2.0-only
"""The script's events as one run anchored them, saved next to the run's pcap.

Why: a timing failure is only obvious when the expected window and the actual packet are
drawn on the same time axis. The pcap holds what happened; this file holds what the script
expected and when (after relative times were anchored on the live run), so a report can
overlay the two without re-running or re-parsing anything. Written by the engine at teardown,
read by :mod:`evidence.tcpplot`.
"""

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .model import Event, PacketEvent, TcpSpec

if TYPE_CHECKING:
    from .config import Config

SUFFIX = ".expected.json"


class _Anchored(Protocol):
    start: int
    end: int | None
    earliest: int
    base: int


@dataclass(frozen=True)
class ExpectedEvent:
    """One script event; times are script seconds. `window_start`..`window_end` is when the
    run would have accepted it: the early edge with the base tolerance, the late edge with
    the base tolerance plus the run's late slack (:class:`.tolerance.Tolerance`). `base`, for
    a relative time (``+0.01``), is the instant it counts from: a timing error says
    ``+0.010~+0.020 sec``, in that clock, and a plot in script time needs it to say the same.
    """

    line: int
    kind: str  # "inbound packet", "outbound packet", "system call start" …
    start: float
    end: float | None
    window_start: float
    window_end: float
    any_time: bool
    flags: str = ""  # TCP only: the script's flags, sequence range and ack
    seq: int | None = None
    seq_end: int | None = None
    ack: int | None = None
    base: float | None = None


@dataclass(frozen=True)
class Timeline:
    script: str
    epoch: float  # wall-clock time (pcap time) of script time 0
    events: list[ExpectedEvent]


def path_for(pcap: str | Path) -> Path:
    return Path(pcap).with_suffix(SUFFIX)


def _expected(event: Event, timed: _Anchored, prev: int | None, cfg: "Config") -> ExpectedEvent:
    end = timed.start if timed.end is None else timed.end
    first, last = (
        (timed.earliest, end)
        if prev is None
        else cfg.tolerance.window(timed.earliest, end, timed.start - prev)
    )
    common = ExpectedEvent(
        line=event.line,
        kind=event.describe(),
        start=timed.start / 1e6,
        end=None if timed.end is None else timed.end / 1e6,
        window_start=first / 1e6,
        window_end=last / 1e6,
        any_time=event.time.any_time,
        base=timed.base / 1e6 if event.time.relative else None,
    )
    action = event.action
    if isinstance(action, PacketEvent) and isinstance(action.l4, TcpSpec):
        spec = action.l4
        return replace(
            common,
            flags=spec.flags,
            seq=spec.start,
            seq_end=spec.end,
            ack=spec.ack if "." in spec.flags else None,
        )
    return common


def write_timeline(
    pcap: str,
    script: str,
    epoch: float,
    timeline: Sequence[tuple[Event, _Anchored, int | None]],
    cfg: "Config",
) -> None:
    events = [asdict(_expected(event, timed, prev, cfg)) for event, timed, prev in timeline]
    path_for(pcap).write_text(json.dumps({"script": script, "epoch": epoch, "events": events}))


def read_timeline(pcap: str | Path) -> Timeline | None:
    """The timeline saved next to *pcap*, or None (not a script run, or an unreadable file)."""
    try:
        data = json.loads(path_for(pcap).read_text())
        return Timeline(
            data["script"], data["epoch"], [ExpectedEvent(**event) for event in data["events"]]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
