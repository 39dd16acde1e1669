"""Child processes (QEMU, virtiofsd) that never outlive the run.

Three layers, because each covers a failure the others miss:
- PR_SET_PDEATHSIG: the kernel kills the child if our process dies (even by SIGKILL);
- `Children.stop()` in `finally` and signal handlers: a clean, ordered stop by PID;
- pidfiles in the cache: the next run reaps what a crashed run left, but only a process whose
  pidfile we wrote, whose owner is dead and whose command line still matches.
"""

import ctypes
import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO

from kernels.errors import KernelsError
from kernels.paths import cache_dir

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")[:-1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Children:
    """The processes one run started; thread-safe, so matrix workers can share it."""

    def __init__(self) -> None:
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._piddir = cache_dir("pids")
        self._closed = False

    def spawn(
        self,
        argv: list[str],
        log: IO[bytes] | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `argv` (stdout+stderr to `log`), tied to our life and recorded in a pidfile."""
        with self._lock:
            if self._closed:
                raise KernelsError("the run was interrupted")
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log if log is not None else subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            start_new_session=True,
        )
        pidfile = self._piddir / f"{proc.pid}.json"
        pidfile.write_text(json.dumps({"pid": proc.pid, "owner": os.getpid(), "argv": argv}))
        with self._lock:
            self._procs[proc.pid] = proc
        return proc

    def stop(self, proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
        """Stop one child by PID (TERM, then KILL after `grace` seconds) and drop its pidfile."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        (self._piddir / f"{proc.pid}.json").unlink(missing_ok=True)
        with self._lock:
            self._procs.pop(proc.pid, None)

    def stop_all(self) -> None:
        """Stop every child still running, and refuse new ones (the outermost `finally`)."""
        with self._lock:
            self._closed = True
            procs = list(self._procs.values())
        for proc in procs:
            self.stop(proc, grace=1.0)


def reap_leftovers() -> list[int]:
    """Kill children of dead runs whose pidfile we wrote; returns the PIDs killed."""
    killed = []
    for pidfile in cache_dir("pids").glob("*.json"):
        try:
            info = json.loads(pidfile.read_text())
            pid, owner, argv = int(info["pid"]), int(info["owner"]), list(info["argv"])
        except (OSError, ValueError, KeyError, TypeError):
            pidfile.unlink(missing_ok=True)
            continue
        if owner != os.getpid() and _alive(owner):
            continue  # a concurrent run owns it
        if _cmdline(pid) == argv:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        pidfile.unlink(missing_ok=True)
    return killed
