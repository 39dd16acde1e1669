# SPDX-License-Identifier: GPL-2.0-only
"""Where a test's wall time goes, by kind of work: namespace set-up, tcpdump, the engine …

Why spans and not a sampling profiler: the question a guest run asks is "how much of an
item's 3 s is set-up, capture, the engine's own work and plain waiting", per *kind* of work,
summed over hundreds of items under TCG; a sampler adds its own load to a one-vCPU guest and
answers by function, not by kind. A span is two monotonic clock reads around a piece of work
the library already does in one place (a namespace created, tcpdump started), added to a
per-process total; a test's totals are taken after it (:func:`take`) and written to the
guest's phase log (``kernels/vm/phases.py``), and ``scripts/bench-vm`` tables them.

Nested spans are not subtracted from their parents: each kind is named so that kinds do not
nest (a namespace's creation does not contain a tcpdump start), and what no span covers is
shown as the rest of the test's wall time. Standard library only: the engine's processes
load this module too.
"""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_totals: dict[str, float] = {}


def add(kind: str, seconds: float) -> None:
    """Count `seconds` of work of `kind` (a child process's own figures, handed back)."""
    with _lock:
        _totals[kind] = _totals.get(kind, 0.0) + seconds


@contextmanager
def span(kind: str) -> Iterator[None]:
    """Count the wall time of the block as work of `kind`, also when it raises."""
    started = time.monotonic()
    try:
        yield
    finally:
        add(kind, time.monotonic() - started)


def take() -> dict[str, float]:
    """The totals counted since the last call, and start again from nothing."""
    with _lock:
        taken = dict(_totals)
        _totals.clear()
    return taken
