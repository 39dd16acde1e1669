# SPDX-License-Identifier: GPL-2.0-only
"""Choosing KVM or TCG by a real probe boot, never by "does /dev/kvm open".

Why: on some hosts /dev/kvm exists and KVM_CREATE_VM succeeds, yet stock kernels cannot run
(kvm_pvm: QEMU aborts on MSR 0x10a, or the guest dies in KVM's emulator; docs/vm-boot.md §1).
Only a guest that boots and runs `true` proves KVM works. The verdict is cached per host kernel
and QEMU build, so the probe costs one boot per machine, not one per run.
"""

import json
import os
import tempfile
from pathlib import Path

from kernels import tools
from kernels.acquire.kernel import BootableKernel
from kernels.paths import cache_dir, locked
from kernels.progress import Status
from kernels.vm.launcher import Accel, Boot, GuestCommand, Launcher

PROBE_TIMEOUT = 20.0  # a working KVM guest runs `true` in a few seconds


def _probe_key() -> str:
    qemu = Path(tools.qemu())
    return f"{os.uname().release}|{qemu}|{qemu.stat().st_mtime_ns}"


def _probe(kernel: BootableKernel, launcher: Launcher) -> bool:
    with tempfile.TemporaryDirectory(dir=cache_dir("run")) as out:
        boot = Boot(kernel, GuestCommand(["true"], Path("/")), Path(out), "kvm", PROBE_TIMEOUT)
        result = launcher.run(boot, print_none)
    return result.verdict == "ok" and result.exit_status == 0


def print_none(_: str) -> None:
    """A status sink for the probe boot, whose steps the user does not need to see."""


def choose_accel(wanted: str, kernel: BootableKernel, launcher: Launcher, status: Status) -> Accel:
    """`wanted` is "kvm", "tcg" or "auto" (probe once per machine, then use the cached verdict)."""
    if wanted in ("kvm", "tcg"):
        return "kvm" if wanted == "kvm" else "tcg"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    verdict_file = cache_dir() / "accel.json"
    with locked(cache_dir() / "accel.lock"):
        try:
            cached = json.loads(verdict_file.read_text())
        except (OSError, ValueError):
            cached = {}
        key = _probe_key()
        if cached.get("key") != key:
            status("probing KVM with a test boot")
            cached = {"key": key, "kvm": _probe(kernel, launcher)}
            verdict_file.write_text(json.dumps(cached))
    return "kvm" if cached["kvm"] else "tcg"
