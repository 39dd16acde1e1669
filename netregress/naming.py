# SPDX-License-Identifier: GPL-2.0-only
"""Resource names that are unique per run and tell the next run who owned them.

Every namespace name is ``nr<pid>s<starttime>-<label>-<n>``. The pid and the process start
time (from /proc) identify the owning process exactly, even after pid reuse, so a later run
can reap the leftovers of a run that was SIGKILLed without ever touching a namespace that
belongs to a live run or to anybody else (anything without our prefix is never touched).
"""

import itertools
import os
import re
from dataclasses import dataclass

PREFIX = "nr"
_NAME_RE = re.compile(rf"^{PREFIX}(?P<pid>\d+)s(?P<start>\d+)-")
_counter = itertools.count(1)


def process_start_time(pid: int) -> int | None:
    """Start time of *pid* in clock ticks since boot, or None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            stat = f.read()
    except OSError:
        return None
    # Field 2 (comm) may contain spaces and parentheses: split after the last ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def run_id() -> str:
    """This process's run id; computed on each call so a forked child gets its own."""
    pid = os.getpid()
    return f"{PREFIX}{pid}s{process_start_time(pid)}"


def unique(label: str) -> str:
    """A new resource name owned by this process, e.g. ``nr4242s9876-client-3``."""
    safe = re.sub(r"[^A-Za-z0-9_.]", "_", label)[:24]
    return f"{run_id()}-{safe}-{next(_counter)}"


@dataclass(frozen=True)
class Owner:
    """The process a resource name says it belongs to."""

    pid: int
    start_time: int

    def alive(self) -> bool:
        return process_start_time(self.pid) == self.start_time


def owner_of(name: str) -> Owner | None:
    """Parse a resource name; None if it is not one of ours."""
    m = _NAME_RE.match(name)
    if not m:
        return None
    return Owner(int(m["pid"]), int(m["start"]))
