# SPDX-License-Identifier: GPL-2.0-only
"""Nothing outlives a run: not on failure, Ctrl-C or SIGKILL (the next run reaps it).

These tests start real pytest runs (or a plain Python process) in a subprocess, interrupt
them the way a user or a crash would, and then look for namespaces and processes.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from netns import reaper
from netregress import naming

BLOCKING_TEST = textwrap.dedent("""
    import time
    def test_blocks(veth_pair):
        with veth_pair["b"].capture("eth0"):
            print("NAMESPACES", " ".join(ns.name for ns in veth_pair.hosts.values()), flush=True)
            time.sleep(120)
""")


def _ours(pid: int) -> list[str]:
    """Namespaces in /run/netns owned by process *pid*."""
    try:
        names = os.listdir("/run/netns")
    except FileNotFoundError:
        return []
    return [n for n in names if (o := naming.owner_of(n)) is not None and o.pid == pid]


def _tcpdumps_in(names: list[str]) -> list[int]:
    return [pid for name in names for pid in reaper.pids_in(f"/run/netns/{name}")]


# A run started from a background job inherits SIGINT ignored, and Python then installs no
# KeyboardInterrupt handler: the child takes Ctrl-C the way a user's run at a terminal does.
_PYTEST_WITH_CTRL_C = (
    "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)


def _start_blocking_run(tmp_path: Path) -> tuple[subprocess.Popen, list[str]]:
    (tmp_path / "test_block.py").write_text(BLOCKING_TEST)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _PYTEST_WITH_CTRL_C,
            "-s",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_block.py"),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("NAMESPACES"):
            return proc, line.split()[1:]
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("the blocking pytest run never reached its test")


def _wait_gone(paths: list[str], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(os.path.exists(p) for p in paths):
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_tears_everything_down(tmp_path: Path, opted_in: None) -> None:
    proc, names = _start_blocking_run(tmp_path)
    assert _tcpdumps_in(names), "tcpdump should be running inside the test namespace"
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    assert _wait_gone([f"/run/netns/{n}" for n in names])
    assert _ours(proc.pid) == []


def test_sigkill_leftovers_reaped_by_next_run(tmp_path: Path, opted_in: None) -> None:
    proc, names = _start_blocking_run(tmp_path)
    proc.kill()
    proc.wait()
    assert sorted(_ours(proc.pid)) == sorted(names), "a SIGKILLed run cannot clean up"
    assert set(names) <= set(reaper.leftover_namespaces())
    # The next normal run reaps them at session start.
    (tmp_path / "test_ok.py").write_text("def test_ok(ns):\n    pass\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_ok.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # (Its "reaped N namespace(s)" line may be missing if a concurrent run got there first.)
    assert _ours(proc.pid) == []


def test_reaper_kills_orphans_inside_and_spares_live_runs(ns) -> None:
    # An orphan that ignored PDEATHSIG (started without it) inside a dead run's namespace.
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
        import subprocess
        from netns import Namespace
        ns = Namespace("orphan")
        p = subprocess.Popen(["ip", "netns", "exec", ns.name, "sleep", "300"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        print(ns.name, p.pid, flush=True)
        import os; os._exit(0)   # die without cleaning up, like a crash
    """),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    name, orphan = child.stdout.split()
    assert os.path.exists(f"/proc/{orphan}")
    reaped = reaper.reap()  # a concurrent run may reap it first: check the outcome
    assert not os.path.exists(f"/run/netns/{name}")
    assert ns.name not in reaped and os.path.exists(ns.path)  # ours is alive: untouched
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{orphan}") and time.monotonic() < deadline:
        time.sleep(0.05)
    stat = Path(f"/proc/{orphan}/stat")
    assert not stat.exists() or stat.read_text().split()[2] == "Z"  # gone, or a zombie
