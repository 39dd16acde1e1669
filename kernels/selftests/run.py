# SPDX-License-Identifier: GPL-2.0-only
"""One selftest script run the way the kselftest runner runs it: from its own folder, under
the folder's ``settings`` timeout (45 s when it names none), exit code 4 a skip; on a host,
contained in namespaces of its own.

Why contained: the scripts configure devices, addresses, routes and sysctls freely, written
for a throw-away machine. On a host each runs in a fresh network, mount and PID namespace
(``stand_ins/contain.sh``): its ``ip netns add`` lands on a private /run, the knobs it may
write are its own namespace's (/proc/sys/net; the rest of /proc/sys is read-only), it cannot
load a module, and its processes die with it. In a VM guest (``NETREGRESS_IN_VM``) the
machine is the throw-away one, and the script runs as the kselftest runner would run it.

Why the iproute2 stand-ins first on PATH: a failure of ``ip``/``bridge``/``tc`` that is not
the kernel's answer (a usage this iproute2 does not know, a link type this kernel was built
without) is written to a log as it happens, and the output reader notes how long that log was
at each result line (kernels/selftests/output.py pins each trouble on its sub-test).
"""

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError
from kernels.selftests.output import SubResult, sub_results
from netregress.process import Process

DEFAULT_TIMEOUT = 45.0  # the kselftest runner's, for a folder whose settings name none
SKIP_EXIT = 4  # KSFT_SKIP
WRAPPED = ("ip", "bridge", "tc")  # iproute2's programs the stand-in watches
_STAND_INS = Path(__file__).parent / "stand_ins"
_CONTAIN = (
    "unshare", "--net", "--mount", "--pid", "--fork", "--kill-child=SIGKILL", "--mount-proc",
    "--propagation", "private",
)  # fmt: skip
_TIMEOUT_SETTING = re.compile(r"^timeout=(\d+)\s*$", re.M)


def settings_timeout(folder: Path) -> float | None:
    """The folder's ``settings`` timeout in seconds: 45 without one, None for ``timeout=0``
    (the runner's "no timeout")."""
    try:
        found = _TIMEOUT_SETTING.search((folder / "settings").read_text(errors="replace"))
    except OSError:
        return DEFAULT_TIMEOUT
    if found is None:
        return DEFAULT_TIMEOUT
    seconds = float(found.group(1))
    return seconds or None


@dataclass(frozen=True)
class ScriptRun:
    """What a run gave: its exit code (None: killed at its timeout), its output, the sub-tests
    it reported, the troubles no sub-test claimed, and its wall time in seconds."""

    exit_code: int | None
    output: str
    results: tuple[SubResult, ...]
    troubles: tuple[str, ...]
    wall: float


def _env(bin_dir: Path, troubles: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in WRAPPED:
        real = shutil.which(name)
        if real is None:
            raise KernelsError(f"'{name}' is not installed (Debian package iproute2)")
        env[f"NETREGRESS_KSFT_REAL_{name}"] = real
        (bin_dir / name).symlink_to(_STAND_INS / "iproute2.sh")
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"
    env["NETREGRESS_KSFT_TROUBLES"] = str(troubles)
    return env


def guest_loopback_up() -> None:
    """In a VM guest only: bring up the guest's own ``lo``, as a booted system has it. The
    scripts run in the guest's initial namespace there, and its init leaves ``lo`` down (our
    cases make namespaces of their own): rtnetlink.sh's ``ip route get 127.0.0.1`` answered
    "Network is unreachable" on 6.1 for that alone. On a host, contain.sh does this in the
    script's own namespace."""
    try:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise KernelsError(f"cannot bring up the guest's lo: {exc}") from None


def run_script(script: Path, *, timeout: float | None, contained: bool) -> ScriptRun:
    """Run `script` from its folder, reading its output as it comes (stdout and stderr as
    one stream), until it exits or `timeout` seconds pass (then it and everything it
    started are killed)."""
    with tempfile.TemporaryDirectory(prefix="netregress-ksft-") as scratch:
        bin_dir = Path(scratch) / "bin"
        bin_dir.mkdir()
        troubles = Path(scratch) / "troubles"
        troubles.write_text("")
        argv = [str(script)]
        if contained:
            argv = [*_CONTAIN, "--", "bash", str(_STAND_INS / "contain.sh"), str(script.parent)]
            argv += [f"./{script.name}"]
        started = time.monotonic()
        proc = Process(
            argv,
            cwd=script.parent,
            env=_env(bin_dir, troubles),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            new_session=True,
        )
        lines, finished = _read(proc, troubles, None if timeout is None else started + timeout)
        _kill_group(proc)  # at its timeout, or what it left running
        code = proc.wait() if finished else None
        proc.stop()
        wall = time.monotonic() - started
        log = troubles.read_text(errors="replace")
    results, unclaimed = sub_results(lines, log)
    output = "".join(line + "\n" for line, _ in lines)
    return ScriptRun(code, output, tuple(results), tuple(unclaimed), wall)


def _read(
    proc: Process, troubles: Path, deadline: float | None
) -> tuple[list[tuple[str, int]], bool]:
    """The output's lines, each with the trouble log's length when it was read, and whether
    the script finished before the deadline. Finished is the script's exit with its output
    read to the end, or quiet for a second after its exit (a process it left behind may hold
    the stream open: it is killed with its group after)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    lines: list[tuple[str, int]] = []
    pending = b""
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return lines, False
        ready, _, _ = select.select([fd], [], [], 1.0 if left is None else min(left, 1.0))
        chunk = os.read(fd, 65536) if ready else None
        size = troubles.stat().st_size
        if not chunk and (ready or proc.poll() is not None):
            if pending:
                lines.append((pending.decode(errors="replace"), size))
            return lines, True
        if chunk:
            *complete, pending = (pending + chunk).split(b"\n")
            lines += [(line.decode(errors="replace"), size) for line in complete]


def _kill_group(proc: Process) -> None:
    """Kill the script and everything it started: its session's process group (made for it;
    its ID stays the script's while any member lives), and on a host the PID namespace, which
    dies with the unshare we started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
