# SPDX-License-Identifier: GPL-2.0-only
"""Script time: microseconds since the script's time 0, on the wall clock.

The wall clock (not a monotonic one) because sniffed packets carry kernel ``CLOCK_REALTIME``
timestamps and ``-v`` prints absolute Unix times like upstream.
"""

import time

_SPIN_USECS = 400  # sleep until this close to the deadline, then spin (sleep overshoots)


class Clock:
    def __init__(self) -> None:
        self.start = time.time()

    def restart(self) -> None:
        self.start = time.time()

    def now(self) -> int:
        """Current script time in usec."""
        return int((time.time() - self.start) * 1e6)

    def to_script(self, stamp: float) -> int:
        """A wall-clock timestamp (seconds) as script time in usec."""
        return int((stamp - self.start) * 1e6)

    def wait_until(self, usecs: int) -> None:
        """Return at script time ``usecs`` (immediately if it has passed).

        The spin yields the GIL every iteration so a blocking-call thread is never starved.
        """
        deadline = self.start + usecs / 1e6
        remaining = deadline - time.time()
        if remaining > _SPIN_USECS / 1e6:
            time.sleep(remaining - _SPIN_USECS / 1e6)
        while time.time() < deadline:
            time.sleep(0)
