# SPDX-License-Identifier: GPL-2.0-only
"""Which guests run at full speed, and the head start of the others.

Two TCG guests saturate two cores, so the matrix runs two at a time (kernels/cli/matrix.py).
But a guest spends its first ~20 s booting, starting Python and collecting, and the guests
running now leave the cores idle ~30 % of the time (measured: their tests wait on the network
and on timers). So every guest starts at once: those with a slot at full speed, the others at
idle priority (``SCHED_IDLE`` and the lowest autogroup weight,
``netregress.priority.idle_priority``: only CPU time nobody else wants), waiting at a gate
before their first test (kernels/vm/gate.py). A guest whose turn comes (a slot freed, it is
first in line) is lifted to the ordinary priority and its gate opened. No test runs before its
guest has a slot: beside a running test there are never more full-priority guests than before
(three at equal priority were slower than two: every guest stretched).
"""

import threading
from dataclasses import dataclass, field


@dataclass
class Slots:
    """``count`` full-speed slots, given in the order the guests joined."""

    count: int
    _line: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def join(self, name: str) -> "Ticket":
        """Queue guest *name* (the order of joining is the order of turns); its ticket says
        when its turn came."""
        with self._lock:
            self._line.append(name)
        ticket = Ticket(self, name)
        ticket.opened()
        return ticket

    def take(self, name: str) -> bool:
        """Give *name* a slot if one is free and it is first in line."""
        with self._lock:
            if self.count > 0 and self._line and self._line[0] == name:
                self._line.pop(0)
                self.count -= 1
                return True
            return False

    def leave(self, name: str, held: bool) -> None:
        """*name* ended: its slot (if *held*) goes back, or it leaves the line."""
        with self._lock:
            if held:
                self.count += 1
            elif name in self._line:
                self._line.remove(name)


@dataclass
class Ticket:
    """One guest's place: :meth:`opened` once its turn came (polled by the launcher), and
    :meth:`done` when the guest ended, which gives the slot to the next one in line."""

    slots: Slots
    name: str
    held: bool = False

    def opened(self) -> bool:
        if not self.held:
            self.held = self.slots.take(self.name)
        return self.held

    def done(self) -> None:
        self.slots.leave(self.name, self.held)
        self.held = False
