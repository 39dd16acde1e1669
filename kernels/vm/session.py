# SPDX-License-Identifier: GPL-2.0-only
"""One VM session: what every command that boots guests opens first and closes last.

Why one verb: a command that boots kernels (the matrix, `pytest --kernel`, the bisect's and
the mutants' runs, `scripts/bench-vm`, a conformance run in a guest) must reap what a dead
run left, tie every QEMU and virtiofsd it starts to its own life, and stop them all however
it ends (a result, an error, Ctrl-C). Written out at each of them, one would forget a step.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kernels.vm.procs import Children, reap_leftovers
from kernels.vm.qemu import InitramfsLauncher


@dataclass(frozen=True)
class VmSession:
    """The session's children (every process it starts), the launcher that boots its guests
    on them, and the PIDs of dead runs' leftovers it stopped when it opened."""

    children: Children
    launcher: InitramfsLauncher
    reaped: list[int]


@contextmanager
def vm_session(smp: int = 1) -> Iterator[VmSession]:
    """Reap dead runs' leftovers, then yield a session whose guests get `smp` CPUs each; on
    leaving, stop every child still running (and refuse new ones)."""
    children = Children()
    reaped = reap_leftovers()
    try:
        yield VmSession(children, InitramfsLauncher(children, smp=smp), reaped)
    finally:
        children.stop_all()
