"""Measure how late this machine wakes up and how fast it runs, to widen timing tolerances.

packetdrill's default tolerance (4 ms) assumes bare metal. Under emulation (QEMU TCG is 15–30×
slower) or heavy load, correct kernels would fail on timing alone. One short measurement
(~0.25 s) per pytest session picks a scale factor; the load can change between sessions, so
it is not cached any longer than that (the plugin hands it to xdist workers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

_SAMPLES = 200
_SLEEP = 0.001
_REFERENCE_LOOP_SECS = 0.004      # a 100k-iteration loop on an ordinary x86-64 host
_JITTER_BUDGET_USECS = 2000.0     # p99 wake-up lateness the default 4 ms tolerance absorbs
_MAX_SCALE = 50.0


@dataclass
class Calibration:
    scale: float
    wakeup_p99_usecs: float
    cpu_slowdown: float

    def describe(self) -> str:
        return (f"tolerance scale {self.scale:.2f} (calibrated: wake-up lateness p99 "
                f"{self.wakeup_p99_usecs:.0f} us, cpu {self.cpu_slowdown:.1f}x reference)")


def measure() -> Calibration:
    """Sleep 1 ms many times and time a fixed busy loop; derive a tolerance scale."""
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
    slowdown = (time.perf_counter() - start) / _REFERENCE_LOOP_SECS
    scale = max(1.0, p99 / _JITTER_BUDGET_USECS, slowdown / 2.0)
    return Calibration(round(min(scale, _MAX_SCALE), 2), p99, round(slowdown, 2))

