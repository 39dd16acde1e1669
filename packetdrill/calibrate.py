# SPDX-License-Identifier: GPL-2.0-only
"""Measure how late this machine wakes up and how fast it runs, to size the late-side slack.

packetdrill's base tolerance (4 ms, or 12.5 % of the gap) assumes bare metal. Under emulation
(QEMU TCG is 10–30× slower) or heavy load, a correct kernel's packets reach us later than the
script says, because the engine and the kernel both run slowly. One short measurement
(~0.25 s) per pytest process, when its first script runs, sizes how much *later* an event may
be; it never makes the early edge wider (:mod:`.tolerance`). Each xdist worker measures for
itself (nothing is handed over: a worker measures the machine as it runs its own scripts),
and the load can change between sessions, so nothing is cached beyond the process.
"""

import time
from dataclasses import dataclass

_SAMPLES = 200
_SLEEP = 0.001
_REFERENCE_LOOP_SECS = 0.004  # a 100k-iteration loop on an ordinary x86-64 host
_JITTER_BUDGET_USECS = 2000.0  # p99 wake-up lateness the base tolerance already absorbs
# Engine and kernel work between an event's anchor and its check, at reference speed: it
# stretches with the CPU slowdown (the old symmetric scale allotted slowdown/2 x 4 ms).
_WORK_USECS = 2000.0
MAX_SLACK_USECS = 1_000_000  # keeps a run's sniff timeouts finite on absurd machines


@dataclass
class Calibration:
    late_slack_usecs: int
    wakeup_p99_usecs: float
    cpu_slowdown: float

    def describe(self) -> str:
        return (
            f"calibrated: wake-up lateness p99 {self.wakeup_p99_usecs:.0f} us, "
            f"cpu {self.cpu_slowdown:.1f}x reference"
        )


def slack_from(wakeup_p99_usecs: float, cpu_slowdown: float) -> int:
    """Late slack for a machine: its wake-up lateness beyond what the base tolerance absorbs,
    plus the reference work's extra duration at the measured slowdown."""
    slack = (
        max(0.0, wakeup_p99_usecs - _JITTER_BUDGET_USECS)
        + max(0.0, cpu_slowdown - 1.0) * _WORK_USECS
    )
    return min(round(slack), MAX_SLACK_USECS)


def measure() -> Calibration:
    """Sleep 1 ms many times and time a fixed busy loop; derive the late slack."""
    lateness = []
    for _ in range(_SAMPLES):
        start = time.perf_counter()
        time.sleep(_SLEEP)
        lateness.append((time.perf_counter() - start - _SLEEP) * 1e6)
    lateness.sort()
    p99 = lateness[int(len(lateness) * 0.99) - 1]
    start = time.perf_counter()
    total = 0
    for i in range(100_000):
        total += i
    slowdown = round((time.perf_counter() - start) / _REFERENCE_LOOP_SECS, 2)
    return Calibration(slack_from(p99, slowdown), p99, slowdown)
