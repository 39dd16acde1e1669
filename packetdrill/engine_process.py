# SPDX-License-Identifier: GPL-2.0-only
"""How an engine process starts: cold for a command line, warmed up ahead for a runner.

:func:`engine_command` starts ``python -S``: the engine needs only the standard library, and
the virtualenv's site hooks cost 1.5-2 s per start in a TCG guest. Both kinds of process start
as a program of the package run by path (:mod:`.programs`), which finds the package through the
folder that holds it.

:func:`start_run` serves the runners' isolated runs (:func:`.backend.run_isolated`). Why warm
up ahead: in a TCG guest a script's own work takes ~0.35 s, but a fresh ``python -S`` and the
engine's imports take ~1.4 s more, on every run. So when a run starts its process, the next
run's process is started too; it imports the engine while the machine is idle and then waits
for its run (a script and its options, for the engine itself, not its command line) on stdin.

What keeps a warm run the same as a cold one:

- **One process, one run.** A standby serves one run and exits, so every run still
  unshares a fresh network namespace from a fresh process (:mod:`.netenv`).
- **It only takes CPU nobody wants.** It warms up at ``SCHED_IDLE``, so it never delays a running
  script or test, and the runner lifts it to ``SCHED_OTHER`` before it hands over the run (the
  engine then picks its own priority, as a cold one does). A runner that may not lift it (no
  ``CAP_SYS_NICE`` in the initial namespace, e.g. a rootless run) keeps no standby: its runs
  start cold, as they always did.
- **Same environment, same folder.** The run's environment and working directory (the
  script's folder, as upstream's runner uses) travel with the run. A standby started
  while a variable the interpreter reads at start was different (``PYTHON*``, locale, ``TZ``)
  is discarded. Other variables may change between runs (pytest names the current test in
  ``PYTEST_CURRENT_TEST``): the run gets the values of its hand-over.
- **It belongs to one thread.** The kernel kills a child when the *thread* that spawned it ends
  (``PR_SET_PDEATHSIG``, :mod:`netregress.process`), so each thread keeps its own standby and
  never runs a script in one another thread spawned.
- **Nothing is left behind.** A standby nobody takes reads end-of-file when its runner exits and
  ends; it dies with the runner on SIGKILL.
"""

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from netregress.priority import idle_priority, lift_priority
from netregress.process import Process

from .loader import CliOptions

_PROGRAMS = Path(__file__).resolve().parent / "programs"


def engine_command() -> list[str]:
    """argv prefix that runs the builtin engine's command line in a new process."""
    return [sys.executable, "-S", str(_PROGRAMS / "main.py")]


def _read_at_start(env: dict[str, str]) -> dict[str, str]:
    """The variables a Python interpreter (and its ``time`` module) acts on when it starts."""
    return {
        name: value
        for name, value in env.items()
        if name.startswith(("PYTHON", "LC_")) or name in ("LANG", "LANGUAGE", "TZ")
    }


@dataclass
class _Standby:
    proc: Process
    env: dict[str, str]


class _Runner(threading.local):
    """One thread's standby (see the module docstring for why per thread)."""

    standby: _Standby | None = None


_RUNNER = _Runner()
_lifting = {"allowed": True}  # False once the kernel refused to lift a standby: no more


def start_run(
    script: str, options: CliOptions, result_json: str, cwd: str
) -> tuple[Process, bytes]:
    """A process for the engine's run of *script* with *options* from *cwd*, which writes its
    result to the file *result_json*, and the bytes to write to its stdin
    (``Popen.communicate(input=…)``). It is this thread's standby when one is ready for the
    current environment, a fresh process otherwise; either way the next run's standby is
    started before the first byte reaches this one."""
    env = dict(os.environ)
    proc = _take_standby(env)
    if proc is None:
        proc = _spawn(idle=False)
    if _lifting["allowed"]:
        _RUNNER.standby = _Standby(_spawn(idle=True), _read_at_start(env))
    run = {"script": script, "options": options, "result_json": result_json, "cwd": cwd}
    return proc, json.dumps({**run, "env": env}).encode()


def _take_standby(env: dict[str, str]) -> Process | None:
    standby, _RUNNER.standby = _RUNNER.standby, None
    if standby is None:
        return None
    if standby.env == _read_at_start(env) and standby.proc.running() and _lift(standby.proc):
        return standby.proc
    standby.proc.stop(signal.SIGKILL)
    return None


def _lift(proc: Process) -> bool:
    """Give a standby ordinary priority; False (and no standbys from now on) if not allowed."""
    try:
        lift_priority(proc.pid)
    except PermissionError:
        _lifting["allowed"] = False
        return False
    except ProcessLookupError:  # it died after running() looked
        return False
    return True


def _spawn(idle: bool) -> Process:
    return Process(
        [sys.executable, "-S", str(_PROGRAMS / "standby.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        setup=idle_priority if idle else None,
    )
