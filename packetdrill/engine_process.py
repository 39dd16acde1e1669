# SPDX-License-Identifier: GPL-2.0-only
"""How an engine process starts: cold for a command line, forked from a warm server for a
runner.

:func:`engine_command` starts ``python -S``: the engine needs only the standard library, and
the virtualenv's site hooks cost 1.5-2 s per start in a TCG guest. Both kinds of process start
as a program of the package run by path (:mod:`.programs`), which finds the package through the
folder that holds it.

:func:`run` serves the runners' isolated runs (:func:`.backend.run_isolated`). Why a server:
in a TCG guest a fresh ``python -S`` and the engine's imports took ~1.4 s of every run, more
than most scripts' own work, and a process warmed up ahead at idle priority got no idle CPU
on a one-vCPU guest whose tests keep it busy (the guest profile, ``scripts/bench-vm``). So a
runner keeps one engine server (:mod:`.programs.forkserver`), which imports the engine once
and forks a child per run.

What keeps a forked run the same as a cold one:

- **One process, one run.** Each run is a child of its own, forked from a server that has done
  nothing but import the engine; it unshares a fresh network namespace (:mod:`.netenv`) and
  exits, so nothing of one run reaches the next.
- **Same environment, same folder.** The run's environment and working directory (the
  script's folder, as upstream's runner uses) travel with the run. A server started while a
  variable the interpreter reads at start was different (``PYTHON*``, locale, ``TZ``) is
  replaced. Other variables may change between runs (pytest names the current test in
  ``PYTEST_CURRENT_TEST``): the run gets the values of its request.
- **It belongs to one thread.** The kernel kills a child when the *thread* that spawned it ends
  (``PR_SET_PDEATHSIG``, :mod:`netregress.process`), so each thread keeps its own server; a
  run dies with its server the same way.
- **Nothing is left behind.** A server reads end-of-file when its runner exits and ends; it
  dies with the runner on SIGKILL, and its run with it. The server kills a run past its time
  by PID (its parent: the one process for which that PID cannot yet be another's).
"""

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from netregress import spans
from netregress.process import Process

from .loader import CliOptions
from .netenv import ChildRun

_PROGRAMS = Path(__file__).resolve().parent / "programs"
# Counted with the spans, though CPU seconds and not wall time: what the runs forked from a
# server used (their runner's accounting of its own children never sees them).
ENGINE_CPU = "engine-cpu"


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


class EngineServerError(RuntimeError):
    """The server ended or spoke out of turn: a run cannot be made through it."""


class _Server:
    """One engine server process and the interpreter settings it started with."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = _read_at_start(env)
        self.proc = Process(
            [sys.executable, "-S", str(_PROGRAMS / "forkserver.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
        )
        self._pending = b""

    def request(self, run: dict[str, object]) -> None:
        """Hand over one run; returns once its child runs."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(run).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise EngineServerError("the engine server has exited") from None
        self.answer("pid")

    def answer(self, key: str) -> dict[str, object]:
        """The server's next line, which must hold `key`; EngineServerError on end-of-file."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise EngineServerError("the engine server has exited")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        entry = json.loads(line)
        if not isinstance(entry, dict) or key not in entry:
            raise EngineServerError(f"the engine server answered {line!r}, not {key}")
        return entry

    def stop(self) -> None:
        self.proc.stop(signal.SIGKILL)


class _Runner(threading.local):
    """One thread's server (see the module docstring for why per thread)."""

    server: _Server | None = None


_RUNNER = _Runner()


def _server(env: dict[str, str]) -> _Server:
    """This thread's server for a run in `env`: the running one, or a new one."""
    server = _RUNNER.server
    if server is not None and (server.env != _read_at_start(env) or not server.proc.running()):
        server.stop()
        server = None
    if server is None:
        server = _RUNNER.server = _Server(env)
    return server


def run(script: str, options: CliOptions, result_json: str, cwd: str, timeout: float) -> ChildRun:
    """The engine's run of *script* with *options* from *cwd*, which writes its result to the
    file *result_json*: a child forked from this thread's server, killed after *timeout*
    seconds. Its stdout and stderr are returned as a command's are."""
    env = dict(os.environ)
    # The run's output lands beside its result file, which the caller made and removes: no
    # folder of its own to make and delete on every run (each costs a few ms under TCG).
    out, err = Path(f"{result_json}.stdout"), Path(f"{result_json}.stderr")
    request = {"script": script, "options": options, "result_json": result_json,
               "cwd": cwd, "env": env, "stdout": str(out), "stderr": str(err),
               "timeout": timeout}  # fmt: skip
    try:
        with spans.span("engine-start"):
            server = _server(env)
            try:
                server.request(request)
            except EngineServerError:  # it died between runs: one new server, once
                server.stop()
                server = _RUNNER.server = _Server(env)
                server.request(request)
        try:
            ended = server.answer("status")
        except BaseException:  # Ctrl-C, or the server gone: the run dies with its server
            server.stop()
            _RUNNER.server = None
            raise
        status, cpu = ended["status"], ended.get("cpu")
        assert isinstance(status, int)
        if isinstance(cpu, int | float):
            spans.add(ENGINE_CPU, cpu)
        return ChildRun(status, _text(out), _text(err), ended.get("timed_out") is True)
    finally:
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except FileNotFoundError:
        return ""
