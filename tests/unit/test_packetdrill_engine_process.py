# SPDX-License-Identifier: GPL-2.0-only
"""A runner's engine runs are forked from a warm server: each is the same run a cold process
makes (the runner's environment, the script's folder, a fresh process and namespace), a run
past its time is killed and the server serves the next, and nothing outlives the runner."""

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from packetdrill import engine_process
from packetdrill.backend import Backend, run_isolated
from packetdrill.engine_process import engine_command

ENGINE = Backend("builtin")
# The engine's shell is a child of the engine process: $PPID is the process that ran the run.
# Freshness of the run's namespace is read from a marker the probe leaves inside it (its
# default TTL, 64 in any new namespace, set to 99 after reading), not from the namespace's
# inode: the kernel reuses a dead namespace's inode number for the next one.
PROBE_SCRIPT = """\
0 `T=/proc/sys/net/ipv4/ip_default_ttl; N=$(readlink /proc/self/ns/net); \
echo "${NETREGRESS_PROBE:-unset} $PPID $(cat $T) $N" > seen; echo 99 > $T`
"""
HOME = Path(__file__).resolve().parents[2]


def _our_children() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(pid) for pid in (task / "children").read_text().split())
    return pids


def _servers() -> set[int]:
    """Our children that are engine servers."""
    found = set()
    for pid in _our_children():
        try:
            if b"forkserver.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except FileNotFoundError:
            pass
    return found


def _eventually(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether `condition` holds within `seconds` (a process the kernel ends takes a moment)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _probe(tmp_path: Path) -> tuple[str, int, str]:
    """(the environment's value, the engine's pid, the namespace's TTL marker and link)."""
    script = tmp_path / "probe.pkt"
    script.write_text(PROBE_SCRIPT)
    result = run_isolated(ENGINE, str(script), [("ip_version", "ipv4")])
    assert result.passed, result.message + result.stderr
    value, pid, ttl, netns = (tmp_path / "seen").read_text().split()
    return value, int(pid), f"ttl={ttl} {netns}"


def test_each_run_is_a_fresh_process_forked_from_one_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETREGRESS_PROBE", "one")
    first_value, first_pid, first_ns = _probe(tmp_path)
    (server,) = _servers()
    value, pid, netns = _probe(tmp_path)
    assert _servers() == {server}  # the same server made both runs ...
    assert (first_value, value) == ("one", "one")
    assert first_pid != pid and server not in (first_pid, pid)  # ... each in a fresh child
    # a fresh namespace: the first run's marker (TTL 99) is not in it, and it is not ours
    assert first_ns.startswith("ttl=64 ") and netns.startswith("ttl=64 ")
    assert netns.split()[1] != os.readlink("/proc/self/ns/net")


def test_a_run_gets_the_environment_of_its_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest renames the current test in the environment before every run: the server still
    serves it, with the values the run was handed."""
    monkeypatch.setenv("NETREGRESS_PROBE", "before")
    _probe(tmp_path)
    (server,) = _servers()
    monkeypatch.setenv("NETREGRESS_PROBE", "after")
    assert _probe(tmp_path)[0] == "after"
    assert _servers() == {server}


def test_a_server_started_under_another_interpreter_setting_serves_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broken case it guards: a warm interpreter keeping a setting it read at start."""
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    _probe(tmp_path)
    (server,) = _servers()
    monkeypatch.setenv("PYTHONHASHSEED", "2")
    _probe(tmp_path)
    assert server not in _servers() and len(_servers()) == 1


def test_a_server_belongs_to_the_thread_that_started_it(tmp_path: Path) -> None:
    """The kernel kills a child when the thread that spawned it ends, so another thread's run
    is never made by this thread's server."""
    _probe(tmp_path)
    (mine,) = _servers()
    theirs: list[set[int]] = []

    def their_run() -> None:
        _probe(tmp_path)
        theirs.append(_servers())

    thread = threading.Thread(target=their_run)
    thread.start()
    thread.join()
    assert theirs and theirs[0] - {mine}  # the thread had a server of its own ...
    assert _eventually(lambda: _servers() == {mine})  # ... which ended with it
    _probe(tmp_path)
    assert _servers() == {mine}


def test_a_run_past_its_time_is_killed_and_the_server_serves_the_next(tmp_path: Path) -> None:
    script = tmp_path / "hangs.pkt"
    script.write_text("0 `echo $$ > shell; sleep 60`\n")
    started = time.monotonic()
    result = run_isolated(ENGINE, str(script), [("ip_version", "ipv4")], timeout=2)
    assert not result.passed and "timed out after 2 s" in result.message
    assert time.monotonic() - started < 30
    (server,) = _servers()
    shell = int((tmp_path / "shell").read_text())  # the run's own child: gone with the run
    assert _eventually(lambda: not Path(f"/proc/{shell}").exists()), shell
    assert _probe(tmp_path)[0] and _servers() == {server}


def test_a_server_that_died_between_runs_is_replaced(tmp_path: Path) -> None:
    _probe(tmp_path)
    (server,) = _servers()
    os.kill(server, signal.SIGKILL)
    assert _eventually(lambda: server not in _servers())
    _probe(tmp_path)
    (new,) = _servers()
    assert new != server and _parent_of(new) == os.getpid()


RUN_ONCE = """import os, sys
sys.path.insert(0, sys.argv[1])
from packetdrill import engine_process

import tempfile
with tempfile.NamedTemporaryFile() as result:
    engine_process.run("/nonexistent.pkt", [("dry_run", None)], result.name, "/", 60)
print(open(f"/proc/self/task/{os.getpid()}/children").read().split())
"""


def test_a_server_ends_with_its_runner() -> None:
    done = subprocess.run(
        [sys.executable, "-S", "-c", RUN_ONCE, str(HOME)],
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (server,) = eval(done.stdout)
    # it reads end-of-file (or is killed) once its runner is gone
    assert _eventually(lambda: not Path(f"/proc/{server}").exists()), server


def test_the_command_line_start_is_cold_and_complete(tmp_path: Path) -> None:
    """``engine_command`` (the CLI, the benchmark) starts a whole engine in one process."""
    done = subprocess.run(
        [*engine_command(), "--dry_run", str(tmp_path / "missing.pkt")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "missing.pkt" in done.stderr


def test_a_run_leaves_only_its_result_file(tmp_path: Path) -> None:
    """Its stdout and stderr travel through files beside the result, removed once read."""
    script = tmp_path / "says.pkt"
    script.write_text("0 `echo to-stdout; echo to-stderr >&2`\n")
    result = tmp_path / "out" / "result.json"
    result.parent.mkdir()
    result.touch()
    run = engine_process.run(str(script), [("ip_version", "ipv4")], str(result), str(tmp_path), 60)
    assert run.returncode == 0, run.stderr
    assert "to-stdout" in run.stdout and "to-stderr" in run.stderr
    assert [path.name for path in result.parent.iterdir()] == ["result.json"]
