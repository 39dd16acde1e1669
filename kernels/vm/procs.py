# SPDX-License-Identifier: GPL-2.0-only
"""What a matrix run keeps while it lives: its child processes (QEMU, virtiofsd) and its
guest output, on the process core (`netregress.process`).

Three layers, because each covers a failure the others miss:
- PR_SET_PDEATHSIG: the kernel kills the child if our process dies (even by SIGKILL);
- `Children.stop()` in `finally` and signal handlers: a clean, ordered stop by PID;
- pidfiles in the cache: the next run reaps what a crashed run left, but only a process whose
  pidfile a dead run wrote and that still has the recorded start time.
What is the matrix's own: a child's stdout and stderr go to one log, and it runs in a session
of its own, so a Ctrl-C at the terminal reaches only us and we stop the VMs in order. A run's
directories in the cache are named after the run too, and dropped by the next run once their
owner is gone: the guest output (kept after the run, for the user to read) and the scratch
directory of a VM's sockets (removed by the run itself unless it was SIGKILLed).
"""

import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import IO

from kernels.paths import cache_dir
from netregress import naming, process
from netregress.priority import idle_priority
from netregress.process import Process


class Children:
    """The processes one run started; thread-safe, so matrix workers can share it."""

    def __init__(self) -> None:
        self._group = process.Children(records=cache_dir("pids"))

    def spawn(
        self,
        argv: list[str],
        log: IO[bytes] | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        idle: bool = False,
    ) -> Process:
        """Start `argv` (stdout+stderr to `log`), tied to our life and recorded in a pidfile;
        `idle`: at idle priority (`priority.idle_priority`) until `priority.lift_priority`, for a
        guest booted ahead of its turn."""
        stdout = log if log is not None else subprocess.DEVNULL
        return self._group.spawn(
            argv, stdout=stdout, stderr=subprocess.STDOUT, cwd=cwd, env=env, new_session=True,
            setup=idle_priority if idle else None,
        )  # fmt: skip

    def stop(self, proc: Process, grace: float = 3.0) -> None:
        """Stop one child by PID (TERM, then KILL after `grace` seconds) and drop its pidfile."""
        self._group.stop(proc, grace)

    def stop_all(self) -> None:
        """Stop every child still running, and refuse new ones (the outermost `finally`)."""
        self._group.stop_all(grace=1.0)


_OWNED_DIRS = ("runs", "run")  # cache folders whose entries are named after their run
# A unix socket's path must fit sun_path: 107 bytes and the NUL. Under a deep cache (a CI job
# keeps it in its project directory) a VM's sockets would not, and virtiofsd refuses to start;
# they then go to a short folder of the same kind in the temporary directory.
_SUN_PATH_MAX = 107
_LONGEST_SOCKET = "root.sock"  # kernels/vm/qemu.py
SHORT_RUN_DIR = Path(tempfile.gettempdir()) / "netregress-run"


def run_dir(label: str) -> Path:
    """A guest output directory in the cache owned by this run (see `reap_leftovers`)."""
    return cache_dir("runs", f"{naming.run_id()}-{label}")


def scratch_dir() -> Path:
    """A new scratch directory (a VM's sockets) owned by this run; the caller removes it."""
    name = f"{naming.run_id()}-{uuid.uuid4().hex[:12]}"
    path = cache_dir("run") / name
    if len(str(path / _LONGEST_SOCKET)) > _SUN_PATH_MAX:
        path = SHORT_RUN_DIR / name
    path.mkdir(parents=True)
    return path


def reap_leftovers() -> list[int]:
    """Kill children of dead runs whose pidfile we wrote and drop those runs' directories;
    returns the PIDs killed."""
    for folder in [*map(cache_dir, _OWNED_DIRS), SHORT_RUN_DIR]:
        if not folder.is_dir():
            continue
        for name in process.leftovers(p.name for p in folder.iterdir()):
            shutil.rmtree(folder / name, ignore_errors=True)
    return process.reap_records(cache_dir("pids"))
