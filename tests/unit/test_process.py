# SPDX-License-Identifier: GPL-2.0-only
"""The process core: children die with us, stops hit only our own PIDs, and the next run reaps
exactly what a dead run left (never a live run's, never a stranger's)."""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netns.variants import broken
from netregress import naming, process
from netregress.errors import NetregressError

# A runner that starts one child through the core, prints the child's PID and waits to be
# killed. With "cancel", the child drops its PDEATHSIG first (as if the kernel's signal were
# lost), so only the record can get rid of it.
_RUNNER = """
import sys, time
from pathlib import Path
from netregress.process import Children
ns = sys.argv[2] or None
records = Path(sys.argv[3]) if sys.argv[3] else None
child = ("import ctypes, time; ctypes.CDLL(None).prctl(1, 0); print('ready', flush=True); "
         "time.sleep(60)") if sys.argv[1] == "cancel" else "import time; time.sleep(60)"
p = Children(records).spawn([sys.executable, "-c", child], ns=ns, stdout=None)
print(p.pid, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_dead(pid: int, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def _sigkilled_runner(mode: str, ns: str = "", records: Path | None = None) -> tuple[int, int]:
    """Start _RUNNER, SIGKILL it once its child runs; returns (runner PID, child PID)."""
    runner = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, mode, ns, str(records or "")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert runner.stdout is not None
    lines = [runner.stdout.readline() for _ in range(2 if mode == "cancel" else 1)]
    child = int(lines[0])
    runner.kill()
    runner.wait()
    return runner.pid, child


def _dead_run_id() -> str:
    """The run id of a process that has exited (what a SIGKILLed run's names carry)."""
    proc = subprocess.Popen(["sleep", "60"])
    run_id = f"{naming.PREFIX}{proc.pid}s{naming.process_start_time(proc.pid)}"
    proc.kill()
    proc.wait()
    return run_id


def _record(directory: Path, run_id: str, pid: int, start: int | None) -> Path:
    path = directory / f"{run_id}-{pid}.json"
    path.write_text(json.dumps({"pid": pid, "start": start, "argv": ["sleep"]}))
    return path


@pytest.mark.parametrize("in_namespace", [False, True], ids=["root", "netns"])
def test_a_child_dies_with_its_parent(in_namespace: bool, ns_factory) -> None:
    """PR_SET_PDEATHSIG: a SIGKILLed runner takes its child along, no cleanup code running."""
    ns = ns_factory("pdeath").name if in_namespace else ""
    _, child = _sigkilled_runner("plain", ns)
    assert wait_dead(child)


def test_stop_signals_only_its_own_child_and_only_once() -> None:
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        proc = process.Process(["sleep", "60"])
        assert proc.running()
        assert proc.stop() == -15
        # Stopped and waited for: its PID may be recycled, so it is never signalled again.
        assert proc.stop() == -15
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_stop_escalates_to_sigkill_after_the_grace_period() -> None:
    proc = process.Process(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert proc.stop(grace=0.2) == -9


def test_stop_all_stops_the_group_only_and_refuses_new_ones() -> None:
    outsider = process.Process(["sleep", "60"])
    group = process.Children()
    procs = [group.spawn(["sleep", "60"]) for _ in range(2)]
    assert group.stop_all() == []
    assert all(p.returncode == -15 for p in procs)
    assert outsider.running()  # not in the group: untouched
    outsider.stop()
    with pytest.raises(NetregressError, match="interrupted"):
        group.spawn(["sleep", "60"])


def test_records_of_a_dead_run_are_reaped_and_a_live_runs_are_not(tmp_path: Path) -> None:
    """End to end: a SIGKILLed run whose child outlived it (its PDEATHSIG gone) is cleaned up
    by the next run from its record; our own live group's child and record stay."""
    runner, orphan = _sigkilled_runner("cancel", records=tmp_path)
    try:
        assert alive(orphan), "the child dropped its PDEATHSIG: it outlives the runner"
        live = process.Children(tmp_path)
        mine = live.spawn(["sleep", "60"])
        assert process.reap_records(tmp_path) == [orphan]
        assert wait_dead(orphan)
        assert mine.running()
        assert [p.name for p in tmp_path.iterdir()] == [f"{naming.run_id()}-{mine.pid}.json"]
        live.stop_all()
        assert list(tmp_path.iterdir()) == []
    finally:
        process.kill([orphan])


def test_a_record_never_kills_a_foreign_process(tmp_path: Path) -> None:
    """A dead run's record whose PID now belongs to somebody else (another start time), a
    record of a live run, and a file without our prefix: nothing is killed."""
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        start = naming.process_start_time(stranger.pid)
        assert start is not None
        recycled = _record(tmp_path, _dead_run_id(), stranger.pid, start + 1)
        live = _record(tmp_path, naming.run_id(), stranger.pid, start)
        foreign = tmp_path / f"other-{stranger.pid}.json"
        foreign.write_text(json.dumps({"pid": stranger.pid, "start": start}))
        assert process.reap_records(tmp_path) == []
        assert stranger.poll() is None
        assert not recycled.exists()  # the dead run's record is dropped all the same
        assert live.exists() and foreign.exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_leftovers_are_our_names_with_a_dead_owner() -> None:
    dead, live = _dead_run_id(), naming.run_id()
    names = [f"{dead}-a", f"{live}-b", "nrfoo-c", "lo", f"{dead}-d", f"x{dead}-e"]
    assert process.leftovers(names) == [f"{dead}-a", f"{dead}-d"]
    assert process.leftovers([f"{naming.PREFIX}{os.getpid()}s1-f"]) == [
        f"{naming.PREFIX}{os.getpid()}s1-f"
    ]  # our PID, another start time: a dead run's


_OWNER = """
import time
from netregress import naming
print(naming.unique("owner"), flush=True)
time.sleep(60)
"""
_WATCHER = """
import sys, time
from netregress.process import exit_with_owner
if sys.argv[2] == "watch":
    exit_with_owner(sys.argv[1], 128)
print("working", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize(
    "mode",
    ["watch", broken("ignore", id="unwatched", why="nothing ends a process we did not start")],
)
def test_work_started_for_a_run_by_another_program_ends_with_the_run(mode: str) -> None:
    """exit_with_owner: a process we did not start (no PDEATHSIG of ours reaches it) exits
    with the given status once the owning run is SIGKILLed, and at once if it is gone."""
    owner = subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    name = owner.stdout.readline().strip()
    work = [sys.executable, "-c", _WATCHER, name, mode]
    watcher = subprocess.Popen(work, stdout=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None and watcher.stdout.readline() == "working\n"
        assert watcher.poll() is None  # the owner lives: the work goes on
        owner.kill()
        owner.wait()
        assert wait_dead(watcher.pid)
        assert watcher.wait() == 128
        assert subprocess.run(work, stdout=subprocess.DEVNULL, timeout=30).returncode == 128
    finally:
        watcher.kill()
        watcher.wait()
        owner.kill()
        owner.wait()


def test_run_waits_for_the_end_and_hands_back_what_was_asked() -> None:
    """process.run is subprocess.run's job on the core: the status, and a pipe's bytes."""
    done = process.run(
        [sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], stdout=subprocess.PIPE
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, b"out\n", None)


def _faults_writing_after_fork(own: bool) -> int:
    """Minor page faults a forked child takes writing to 8 MiB its parent had written, with or
    without :func:`process.own_pages` first (after it: outside the measured part)."""
    data = bytearray(8 << 20)
    for offset in range(0, len(data), 4096):
        data[offset] = 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        if own:
            process.own_pages()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for offset in range(0, len(data), 4096):
            data[offset] = 2
        taken = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        os.write(write, str(taken).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        taken = int(pipe.read())
    os.waitpid(pid, 0)
    return taken


@pytest.mark.skipif(os.geteuid() != 0, reason="locking memory beyond RLIMIT_MEMLOCK needs root")
def test_a_child_that_owns_its_pages_takes_no_fault_writing_them() -> None:
    """The broken variant is the plain fork: a fault per page written (2,048 here)."""
    assert _faults_writing_after_fork(own=False) >= 2000
    assert _faults_writing_after_fork(own=True) < 100
