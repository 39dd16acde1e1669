# SPDX-License-Identifier: GPL-2.0-only
"""A runner's engine server (:mod:`packetdrill.engine_process`): it imports the engine once,
then forks one child per run; the child makes the run and exits.

Protocol, one JSON object a line: the runner writes a run (script, options, result file,
folder, environment, files for the run's stdout and stderr, its time limit); the server
answers ``{"pid": N}`` once the child runs and ``{"status": S, "timed_out": B, "cpu": C}``
once it has ended (its exit status, or minus the signal that ended it; killed past its limit,
or not; the CPU seconds it used, which the runner's own accounting of its children cannot see,
as the run is not its child).
End-of-file on stdin ends the server; the runner stops a run it no longer wants by stopping
the server, whose death ends the run (``PR_SET_PDEATHSIG``).

Why fork: a run needs a fresh process (it unshares a fresh network namespace and leaves it
by exiting), but not a fresh interpreter; under TCG a ``python -S`` and the engine's imports
take over a second, a fork of this small process a few milliseconds.
"""

import json
import os
import select
import signal
import sys

sys.path[0] = sys.path[0].rsplit("/", 2)[0]  # this folder's place: the package's folder

from netregress.process import die_with_parent, own_pages  # noqa: E402
from packetdrill.engine import run_script  # noqa: E402  (the warm-up: all a run imports)


def _child(run: dict[str, object], server: int) -> int:
    """In the forked child: the run, in its folder, environment and output files."""
    die_with_parent(server)
    own_pages()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for fd, key in ((1, "stdout"), (2, "stderr")):
        file = os.open(str(run[key]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(file, fd)
        os.close(file)
    os.chdir(str(run["cwd"]))
    env = run["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    options = run["options"]
    assert isinstance(options, list)
    try:
        result = run_script(str(run["script"]), [(name, value) for name, value in options])
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    with open(str(run["result_json"]), "w") as out:
        out.write(result.to_json())
    if result.message:
        print(result.message, file=sys.stderr)
    return 0 if result.passed else 1


def _fork(run: dict[str, object]) -> int:
    server = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        status = _child(run, server)
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return pid  # not reached: the child always leaves through os._exit


def _answer(entry: dict[str, int | bool | float]) -> None:
    sys.stdout.write(json.dumps(entry) + "\n")
    sys.stdout.flush()


def _ended_in_time(pid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for our child `pid` to end; SIGKILL it past that. Only
    its parent may kill it by PID safely: until we reap it, the PID cannot be anyone else's."""
    pidfd = os.pidfd_open(pid)
    try:
        if select.select([pidfd], [], [], timeout)[0]:
            return True
    finally:
        os.close(pidfd)
    os.kill(pid, signal.SIGKILL)
    return False


def serve() -> None:
    """Runs, one at a time, until the runner closes our stdin."""
    for line in sys.stdin:
        if not line.strip():
            continue
        run = json.loads(line)
        pid = _fork(run)
        _answer({"pid": pid})
        in_time = _ended_in_time(pid, float(run["timeout"]))
        _, status, usage = os.wait4(pid, 0)
        _answer({"status": os.waitstatus_to_exitcode(status), "timed_out": not in_time,
                 "cpu": usage.ru_utime + usage.ru_stime})  # fmt: skip


if __name__ == "__main__":
    try:
        serve()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
