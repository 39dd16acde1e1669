# SPDX-License-Identifier: GPL-2.0-only
"""Mutable state of one script run shared by the runtime and the system-call executor."""

import threading
from dataclasses import dataclass, field

from .clock import Clock
from .config import Config
from .conn import Conn
from .netenv import reserve_ephemeral_port


@dataclass
class FdEntry:
    """A script fd label bound to a live fd (and, for sockets, its connection)."""

    live: int
    conn: Conn | None = None


@dataclass
class State:
    cfg: Config
    clock: Clock
    ephemeral_port: int = 0
    fds: dict[int, FdEntry] = field(default_factory=dict)
    sut: Conn | None = None  # the "socket under test": docs/packetdrill-language.md §5.9
    conns: list[Conn] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)
    keep_alive: list[object] = field(default_factory=list)  # send buffers (--send_omit_free)
    passive_opens: int = 0
    # How far the current event is due behind the script's own clock (errors.TimelineDrift).
    drift: int = 0

    def new_conn(self, proto: int) -> Conn:
        conn = Conn(proto)
        with self.lock:
            self.conns.append(conn)
            self.sut = conn
        return conn

    def passive_port(self) -> int:
        """Remote port of the next passive open: the run's reserved port first, then a new
        reservation each time (upstream's rule), so a second SYN never lands on an earlier
        connection that is still open. Reservations are held until the run ends."""
        self.passive_opens += 1
        if self.passive_opens == 1:
            return self.ephemeral_port
        sock, port = reserve_ephemeral_port(self.cfg)
        self.keep_alive.append(sock)
        return port
