# SPDX-License-Identifier: GPL-2.0-only
"""A runner's engine process is warmed up ahead: the run it serves is the same run a cold
process makes (the runner's environment, the script's folder, a fresh namespace), it warms up
only on idle CPU, and a runner that may not lift it to ordinary priority keeps none."""

import os
import pwd
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

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
# The engine needs only the standard library; the user nobody may not reach the virtualenv's
# interpreter (it can live under /root).
SYSTEM_PYTHON = "/usr/bin/python3"


def _our_children() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(pid) for pid in (task / "children").read_text().split())
    return pids


def _standbys() -> set[int]:
    """Our children that wait at idle priority: the standbys."""
    idle = set()
    for pid in _our_children():
        try:
            if os.sched_getscheduler(pid) == os.SCHED_IDLE:
                idle.add(pid)
        except ProcessLookupError:
            pass
    return idle


def _probe(tmp_path: Path) -> tuple[str, int, str]:
    """(the environment's value, the engine's pid, the namespace's TTL marker and link)."""
    script = tmp_path / "probe.pkt"
    script.write_text(PROBE_SCRIPT)
    result = run_isolated(ENGINE, str(script), [("ip_version", "ipv4")])
    assert result.passed, result.message + result.stderr
    value, pid, ttl, netns = (tmp_path / "seen").read_text().split()
    return value, int(pid), f"ttl={ttl} {netns}"


def test_the_next_run_is_served_by_the_standby_started_with_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETREGRESS_PROBE", "one")
    first_value, first_pid, first_ns = _probe(tmp_path)
    (standby,) = _standbys()
    value, pid, netns = _probe(tmp_path)
    assert pid == standby
    assert (first_value, value) == ("one", "one")
    assert first_pid != pid  # a fresh process
    # a fresh namespace: the first run's marker (TTL 99) is not in it, and it is not ours
    assert first_ns.startswith("ttl=64 ") and netns.startswith("ttl=64 ")
    assert netns.split()[1] != os.readlink("/proc/self/ns/net")
    assert _standbys() and standby not in _our_children()


def test_a_run_gets_the_environment_of_its_hand_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest renames the current test in the environment before every run: the standby still
    serves it, with the values the run was handed."""
    monkeypatch.setenv("NETREGRESS_PROBE", "before")
    _probe(tmp_path)
    (standby,) = _standbys()
    monkeypatch.setenv("NETREGRESS_PROBE", "after")
    assert _probe(tmp_path)[:2] == ("after", standby)


def test_a_standby_started_under_another_interpreter_setting_serves_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broken case it guards: a warm interpreter keeping a setting it read at start."""
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    _probe(tmp_path)
    (standby,) = _standbys()
    monkeypatch.setenv("PYTHONHASHSEED", "2")
    pid = _probe(tmp_path)[1]
    assert pid != standby and standby not in _our_children()


def test_a_standby_belongs_to_the_thread_that_started_it(tmp_path: Path) -> None:
    """The kernel kills a child when the thread that spawned it ends, so another thread's run
    is never served by this thread's standby."""
    _probe(tmp_path)
    (mine,) = _standbys()
    theirs: list[int] = []
    thread = threading.Thread(target=lambda: theirs.append(_probe(tmp_path)[1]))
    thread.start()
    thread.join()
    assert theirs and theirs[0] != mine
    assert _probe(tmp_path)[1] == mine


RUN_ONCE = """import os, sys
sys.path.insert(0, sys.argv[1])
from packetdrill import engine_process

def run_once():
    proc, request = engine_process.start_run(
        "/nonexistent.pkt", [("dry_run", None)], os.devnull, "/"
    )
    proc.communicate(request)
    children = open(f"/proc/self/task/{os.getpid()}/children").read().split()
    return [(int(pid), os.sched_getscheduler(int(pid))) for pid in children]
"""


def _python(code: str, *prefix: str, python: str = sys.executable) -> list[list[tuple[int, int]]]:
    done = subprocess.run(
        [*prefix, python, "-S", "-c", RUN_ONCE + code, str(HOME)],
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [eval(line) for line in done.stdout.splitlines()]


def test_a_standby_nobody_takes_ends_with_its_runner() -> None:
    [[(standby, policy)]] = _python("print(run_once())")
    assert policy == os.SCHED_IDLE
    for _ in range(100):  # it reads end-of-file (or is killed) once its runner is gone
        if not Path(f"/proc/{standby}").exists():
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"standby {standby} outlived its runner")


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to the user nobody (needs root)")
@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason=f"no {SYSTEM_PYTHON}")
def test_a_runner_that_may_not_lift_a_standby_keeps_none() -> None:
    """As a normal user the kernel refuses to lift a process out of SCHED_IDLE: its runs start
    cold (the first run leaves a standby, the second finds it cannot use it, and keeps none)."""
    nobody = pwd.getpwnam("nobody")
    as_nobody = ("setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                 "--clear-groups")  # fmt: skip
    first, second = _python(
        "print(run_once()); print(run_once())", *as_nobody, python=SYSTEM_PYTHON
    )
    assert [policy for _, policy in first] == [os.SCHED_IDLE]  # a standby was started ...
    assert second == []  # ... it could not be lifted, and no other was started


def test_the_command_line_start_is_cold_and_complete(tmp_path: Path) -> None:
    """``engine_command`` (the CLI, the benchmark) starts a whole engine in one process."""
    done = subprocess.run(
        [*engine_command(), "--dry_run", str(tmp_path / "missing.pkt")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "missing.pkt" in done.stderr
