# SPDX-License-Identifier: GPL-2.0-only
"""The order the matrix starts kernels in, from what each kernel's guest took last time.

Why an order matters: the matrix runs a few guests at full speed (two on two cores) and boots
the rest ahead of their turn, at idle priority (slots.py). A guest that starts with a slot
pays its start-up (boot, Python, collection: 16–23 s under TCG) on the matrix's critical path;
a guest booted ahead has done it by its turn and adds only its tests. So:

- the first ``jobs`` guests are those with the shortest start-up (measured, at full speed);
- the rest follow longest tests first, so the slot that frees first takes the longest
  remaining work (the classic longest-processing-time rule) and no slot idles at the end.

Why not whole seconds, as before: they counted a booted-ahead guest's wait at the gate as its
own time, so the pair that waited started first next time, and the first pair alternated from
run to run (the matrix took 219–236 s on this machine depending on the pair). This order is
the same every run.

Each guest's two figures come from its own phase log (kernels/vm/phases.py, guest clock): its
start-up only when it started with a slot (a guest booted ahead started at idle priority, so
its last full-speed figure is kept), its tests from its first test to its exit. A kernel
never timed starts first (a fresh source build may be the slowest). The running kernel's
column does not queue (kernels/cli/matrix.py). Only the start order changes: columns and
reports keep the plan's order.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from kernels.matrix.shard import Piece
from kernels.paths import cache_dir, locked
from kernels.vm import phases

FILE = "durations.json"


@dataclass(frozen=True)
class Timing:
    """A guest's seconds before its first test (None: not measured at full speed) and from
    its first test to its exit."""

    startup: float | None
    tests: float


def measured(log: phases.Log) -> Timing | None:
    """A guest's timing from its phase log; None if it never reached its tests or its exit."""
    stamps = log.stamps
    if "collected" not in stamps or "exited" not in stamps:
        return None
    ahead = "gate-opened" in stamps  # it waited at the gate: booted ahead, at idle priority
    first_test = max(stamps["collected"], stamps.get("gate-opened", 0.0))
    return Timing(None if ahead else stamps["collected"], stamps["exited"] - first_test)


def _path() -> Path:
    return cache_dir() / FILE


def _known() -> dict[str, Timing]:
    try:
        data = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    known = {}
    for name, entry in data.items():
        # an older checkout's plain seconds carry no start-up: such a kernel counts as new
        if isinstance(entry, dict) and isinstance(entry.get("tests"), int | float):
            startup = entry.get("startup")
            known[str(name)] = Timing(
                float(startup) if isinstance(startup, int | float) else None, float(entry["tests"])
            )
    return known


def start_order(pieces: list[Piece], jobs: int) -> list[Piece]:
    """`pieces` in the order their guests should take the `jobs` slots (see the module)."""
    known = _known()
    new = [piece for piece in pieces if piece.kernel not in known]
    timed = [piece for piece in pieces if piece.kernel in known]
    timed.sort(key=lambda piece: _startup(known[piece.kernel]))
    first = timed[: max(0, jobs - len(new))]
    rest = sorted(timed[len(first) :], key=lambda piece: -known[piece.kernel].tests)
    return new + first + rest


def _startup(timing: Timing) -> float:
    """Never measured at full speed: assume the longest, so a measured one goes first."""
    return float("inf") if timing.startup is None else timing.startup


def remember(timings: dict[str, Timing]) -> None:
    """Keep this run's timing per kernel (whole kernels only: a slice is not comparable); a
    start-up not measured now keeps the last one that was."""
    with locked(_path().with_name(FILE + ".lock")):
        known = _known()
        for name, timing in timings.items():
            if timing.startup is None and name in known:
                timing = Timing(known[name].startup, timing.tests)
            known[name] = timing
        data = {name: {"startup": t.startup, "tests": t.tests} for name, t in known.items()}
        tmp = _path().with_name(FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        tmp.replace(_path())
