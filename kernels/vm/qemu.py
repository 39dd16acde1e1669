# SPDX-License-Identifier: GPL-2.0-only
"""The minimal-initramfs launcher: QEMU (`-M pc`) + two virtiofsd shares + our busybox init.

Shares: the host root, read-only (the guest overlays it with tmpfs), and the per-run output
dir, writable, which carries the command in (`boot.env`, `guest.sh`) and the results out
(`booted`, `exit-status`, JUnit XML). The console goes to `console.log` in the same dir.
Why `-M pc`: `microvm` hangs in early boot with several TCG guests at once (docs/vm-boot.md §2).
"""

import shlex
import shutil
import time
from pathlib import Path

from kernels import tools
from kernels.acquire.kernel import BootableKernel
from kernels.errors import KernelsError
from kernels.progress import Status
from kernels.vm import console as console_scan
from kernels.vm import gate
from kernels.vm.initramfs import GUEST_OUT, OUT_TAG, ROOT_TAG, initramfs_for
from kernels.vm.launcher import Accel, Boot, Gate, GuestCommand, GuestResult
from kernels.vm.phases import FILE as PHASES_FILE
from kernels.vm.phases import shell_stamp
from kernels.vm.procs import Children, scratch_dir
from netregress.priority import lift_priority
from netregress.process import Process

BOOT_TIMEOUT = 120.0  # seconds from QEMU start to the guest's `booted` marker
MEMORY_MB = 1024
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def accel_args(accel: Accel) -> list[str]:
    """QEMU's acceleration and CPU model: the host CPU under KVM, every TCG feature otherwise."""
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    return ["-accel", "tcg,thread=multi", "-cpu", "max"]


def guest_script(command: GuestCommand, gated: bool = False) -> str:
    """The shell script the guest init runs (inside the overlaid host root); `gated`: the
    guest boots ahead of its turn and its tests wait at the gate (kernels/vm/gate.py)."""
    phases = f"{GUEST_OUT}/{PHASES_FILE}"
    env = {**command.env, gate.ENV: f"{GUEST_OUT}/{gate.FILE}"} if gated else command.env
    lines = [
        "#!/bin/sh",
        f": > {GUEST_OUT}/booted",
        shell_stamp("userspace", phases),
        f"export PATH={GUEST_PATH} HOME=/root TERM=dumb LANG=C.UTF-8",
        *(f"export {key}={shlex.quote(value)}" for key, value in sorted(env.items())),
    ]
    if command.modules:
        modules = " ".join(command.modules)
        lines.append(f"modprobe -a -q {modules} || echo 'netregress: some modules did not load'")
        lines.append(shell_stamp("modules-loaded", phases))
    lines += [
        f"cd {shlex.quote(str(command.cwd))} || exit 125",
        "exec " + shlex.join(command.argv),
    ]
    return "\n".join(lines) + "\n"


class InitramfsLauncher:
    """Boots a kernel with our initramfs; see the module docstring for the protocol."""

    def __init__(self, children: Children, smp: int = 1) -> None:
        self.children = children
        self.smp = smp

    def _wait_socket(self, proc: Process, socket: Path, log: Path, patience: float) -> None:
        deadline = time.monotonic() + patience
        while not socket.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                detail = console_scan.tail(log.read_text(), 5)
                raise KernelsError(f"virtiofsd did not start: {detail}")
            time.sleep(0.02)

    def _qemu_argv(
        self,
        kernel: BootableKernel,
        out_dir: Path,
        sockets: tuple[Path, Path],
        accel: Accel,
        ahead: bool,
    ) -> list[str]:
        assert kernel.image is not None
        # no_timer_check: on a loaded host a TCG guest misses the IO-APIC timer check's
        # deadline, and 5.10 panics at boot ("IO-APIC + timer doesn't work").
        append = (
            "console=ttyS0 loglevel=5 panic=-1 oops=panic reboot=t mitigations=off no_timer_check"
        )
        if ahead:  # starved on purpose until its turn: see kernels/vm/gate.py
            append += " " + " ".join(gate.DETECTORS_OFF)
        argv = [
            tools.qemu(), "-M", "pc", *accel_args(accel), "-smp", str(self.smp),
            "-m", f"{MEMORY_MB}M", "-nodefaults", "-no-reboot", "-display", "none",
            "-object", f"memory-backend-memfd,id=mem,size={MEMORY_MB}M,share=on",
            "-numa", "node,memdev=mem",
            "-kernel", str(kernel.image), "-initrd", str(initramfs_for(kernel)),
            "-append", append,
            "-serial", f"file:{out_dir / 'console.log'}",
        ]  # fmt: skip
        for number, (socket, tag) in enumerate(zip(sockets, (ROOT_TAG, OUT_TAG), strict=True)):
            argv += [
                "-chardev", f"socket,id=fs{number},path={socket}",
                "-device", f"vhost-user-fs-pci,chardev=fs{number},tag={tag}",
            ]  # fmt: skip
        return argv

    def run(self, boot: Boot, status: Status) -> GuestResult:
        """Boot, run, power off; never leaves a process behind (see procs.py)."""
        kernel, out_dir = boot.kernel, boot.out_dir
        assert kernel.modules is not None
        out_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("booted", "exit-status", "console.log", PHASES_FILE, gate.FILE):
            (out_dir / stale).unlink(missing_ok=True)
        (out_dir / "boot.env").write_text(
            f"NR_RELEASE={shlex.quote(kernel.release)}\n"
            f"NR_MODULES={shlex.quote(str(kernel.modules.resolve()))}\n"
        )
        waiting = boot.gate if boot.gate is not None and not boot.gate.opened() else None
        ahead = waiting is not None  # booted ahead of its turn, at idle priority (slots.py)
        (out_dir / "guest.sh").write_text(guest_script(boot.command, gated=ahead))
        work = scratch_dir()
        sockets = (work / "root.sock", work / "out.sock")
        procs: list[Process] = []
        start = time.monotonic()
        try:
            with (work / "virtiofsd.log").open("wb") as log:
                for socket, shared, extra in (
                    (sockets[0], "/", ["--readonly", "--cache=always"]),
                    (sockets[1], str(out_dir), ["--cache=never"]),
                ):
                    argv = [
                        tools.virtiofsd(), f"--socket-path={socket}",
                        f"--shared-dir={shared}",
                        "--sandbox=none", "--no-announce-submounts", "--log-level=error", *extra,
                    ]  # fmt: skip
                    procs.append(self.children.spawn(argv, log, idle=ahead))
                    # at idle priority it may wait for CPU time as long as a boot may
                    patience = BOOT_TIMEOUT if ahead else 10.0
                    self._wait_socket(procs[-1], socket, work / "virtiofsd.log", patience)
            with (work / "qemu.log").open("wb") as log:
                argv = self._qemu_argv(kernel, out_dir, sockets, boot.accel, ahead)
                procs.append(self.children.spawn(argv, log, idle=ahead))
                status("booting ahead, at idle priority" if ahead else "booting")
                boot_seconds, hang = self._watch(
                    procs, out_dir, start, boot.timeout, waiting, status
                )
            total = time.monotonic() - start
            qemu_log = (work / "qemu.log").read_text(errors="replace")
        finally:
            for proc in reversed(procs):
                self.children.stop(proc)
            shutil.rmtree(work, ignore_errors=True)
        return verdict(out_dir, boot_seconds, total, hang, qemu_log)

    def _watch(
        self,
        procs: list[Process],
        out_dir: Path,
        start: float,
        timeout: float,
        waiting: Gate | None,
        status: Status,
    ) -> tuple[float | None, str | None]:
        """Wait for QEMU (the last of `procs`) to exit; (boot seconds, hang description or
        None). A guest `waiting` for its turn has no time limit until the turn came."""
        qemu = procs[-1]
        boot_seconds: float | None = None
        boot_timeout = min(BOOT_TIMEOUT, timeout)
        limits_from = start
        while qemu.poll() is None:
            now = time.monotonic()
            if boot_seconds is None and (out_dir / "booted").exists():
                boot_seconds = now - start
                status("booted ahead, waiting for a free slot" if waiting else "running")
            if waiting is not None and waiting.opened():
                _open_gate(procs, out_dir)
                waiting, limits_from = None, now
                status("running" if boot_seconds is not None else "booting")
            if waiting is None and boot_seconds is None and now - limits_from > boot_timeout:
                return None, f"hung boot: no guest userspace after {boot_timeout:.0f} s"
            if waiting is None and now - limits_from > timeout:
                return boot_seconds, f"timeout: the guest ran longer than {timeout:.0f} s"
            time.sleep(0.05)
        if boot_seconds is None and (out_dir / "booted").exists():
            boot_seconds = time.monotonic() - start
        return boot_seconds, None


def _open_gate(procs: list[Process], out_dir: Path) -> None:
    """A guest's turn came: its processes get their ordinary priority, then its tests may go."""
    for proc in procs:
        try:
            lift_priority(proc.pid)
        except ProcessLookupError:
            pass  # it ended: the watch reports how
    (out_dir / gate.FILE).touch()


def verdict(
    out_dir: Path, boot_seconds: float | None, total: float, hang: str | None, qemu_log: str
) -> GuestResult:
    """Classify the ended guest from the console, the exit-status file and the hang state."""
    console_path = out_dir / "console.log"
    text = console_path.read_text(errors="replace") if console_path.exists() else ""
    status_file = out_dir / "exit-status"
    status = int(status_file.read_text().strip() or 255) if status_file.exists() else None
    crash = console_scan.scan(text)
    if crash is None and hang is not None:
        crash = console_scan.Crash(hang, console_scan.tail(text))
    if crash is None and status is None:
        reason = "the guest stopped without reporting an exit status"
        if qemu_log.strip():
            reason += f" (qemu: {qemu_log.strip().splitlines()[-1]})"
        crash = console_scan.Crash(reason, console_scan.tail(text))
    return GuestResult(
        verdict="crash" if crash else "ok",
        exit_status=status,
        console=console_path,
        out_dir=out_dir,
        boot_seconds=boot_seconds,
        total_seconds=total,
        crash=crash,
    )
