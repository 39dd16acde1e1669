# SPDX-License-Identifier: GPL-2.0-only
"""The launcher interface: boot one kernel, run one command in it, bring back what happened.

Why an interface: virtme-ng is the reference launcher and our busybox initramfs the faster one
on TCG (docs/vm-boot.md §5); the matrix and the pytest plugin only see `Launcher.run()`, so the
launcher can be swapped without touching them.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from kernels.acquire.kernel import BootableKernel
from kernels.progress import Status
from kernels.vm.console import Crash

Accel = Literal["kvm", "tcg"]
Verdict = Literal["ok", "crash"]


@dataclass(frozen=True)
class GuestCommand:
    """What to run in the guest: argv from `cwd` with `env`, after modprobing `modules`."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class GuestResult:
    """How the guest ended. `verdict` is "crash" for a panic/oops/hang/timeout/early death."""

    verdict: Verdict
    exit_status: int | None
    console: Path
    out_dir: Path
    boot_seconds: float | None
    total_seconds: float
    crash: Crash | None = None


class Gate(Protocol):
    """When a guest booted ahead of its turn may run its tests (kernels/matrix/slots.py)."""

    def opened(self) -> bool:
        """True once the turn came (polled; stays True)."""
        ...


@dataclass(frozen=True)
class Boot:
    """One guest run: the kernel, what to run in it, where results go, how, and how long.
    With a `gate` not yet open, the guest boots at idle priority and waits before its tests
    (kernels/vm/gate.py); `timeout` then counts from the opening."""

    kernel: BootableKernel
    command: GuestCommand
    out_dir: Path
    accel: Accel
    timeout: float
    gate: Gate | None = None


class Launcher(Protocol):
    """Boots a kernel with the host root shared read-only and runs one command in it."""

    def run(self, boot: Boot, status: Status) -> GuestResult:
        """Run the command; `status` hears "booting" and "running" (guest userspace is up)."""
        ...
