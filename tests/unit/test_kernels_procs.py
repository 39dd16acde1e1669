"""Child processes never outlive a run; the next run reaps only what a dead run left behind."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernels import tools
from kernels.errors import KernelsError
from kernels.vm.cpio import Entry, archive, directory
from kernels.vm.procs import Children, reap_leftovers


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_stop_all_stops_children_and_refuses_new_ones(tmp_path: Path) -> None:
    children = Children()
    procs = [children.spawn(["sleep", "60"]) for _ in range(2)]
    children.stop_all()
    assert not any(_alive(p.pid) for p in procs)
    assert not list((tmp_path / "cache/netregress/kernels/pids").iterdir())
    with pytest.raises(KernelsError, match="interrupted"):
        children.spawn(["sleep", "60"])


def test_children_die_with_their_parent(tmp_path: Path) -> None:
    """PR_SET_PDEATHSIG: a SIGKILLed runner takes its QEMU along, no cleanup code needed."""
    script = (
        "import sys, time; from kernels.vm.procs import Children; "
        "p = Children().spawn(['sleep', '60']); print(p.pid, flush=True); time.sleep(60)"
    )
    runner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ})
    assert runner.stdout is not None
    child = int(runner.stdout.readline())
    runner.kill()
    runner.wait()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_reap_kills_only_matching_leftovers_of_dead_runs(tmp_path: Path) -> None:
    piddir = tmp_path / "cache/netregress/kernels/pids"
    piddir.mkdir(parents=True)
    orphan = subprocess.Popen(["sleep", "61"])
    stranger = subprocess.Popen(["sleep", "62"])
    try:
        dead = _dead_pid()
        for proc, argv in ((orphan, ["sleep", "61"]), (stranger, ["sleep", "999"])):
            (piddir / f"{proc.pid}.json").write_text(
                json.dumps({"pid": proc.pid, "owner": dead, "argv": argv}))
        live_owner = subprocess.Popen(["sleep", "63"])
        (piddir / "1.json").write_text(json.dumps({"pid": 1, "owner": live_owner.pid, "argv": []}))
        assert reap_leftovers() == [orphan.pid]
        orphan.wait(5)
        assert stranger.poll() is None  # its command line does not match: not ours to kill
        assert (piddir / "1.json").exists()  # its run is alive: not a leftover
        live_owner.kill()
    finally:
        for proc in (orphan, stranger):
            proc.kill()
            proc.wait()


def test_missing_tools_tell_the_user_what_to_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path))
    monkeypatch.setattr(tools, "DEBIAN_VIRTIOFSD", str(tmp_path / "none"))
    tools.qemu.cache_clear()
    tools.virtiofsd.cache_clear()
    try:
        with pytest.raises(KernelsError, match=r"qemu-system-x86_64 is missing: run scripts/setup"):
            tools.qemu()
        with pytest.raises(KernelsError, match=r"virtiofsd is missing: run scripts/setup --vm"):
            tools.virtiofsd()
    finally:
        tools.qemu.cache_clear()
        tools.virtiofsd.cache_clear()


def _read_newc(data: bytes) -> dict[str, tuple[int, bytes]]:
    members: dict[str, tuple[int, bytes]] = {}
    offset = 0
    while True:
        fields = [int(data[offset + 6 + 8 * i : offset + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name_at = offset + 110
        name = data[name_at : name_at + namesize - 1].decode()
        body_at = name_at + namesize + (-(110 + namesize) % 4)
        if name == "TRAILER!!!":
            return members
        members[name] = (mode, data[body_at : body_at + size])
        offset = body_at + size + (-size % 4)


def test_cpio_newc_archive_is_what_the_kernel_unpacks() -> None:
    data = archive([directory("bin"), Entry("init", 0o755, b"#!/bin/sh\n"),
                    Entry("bin/sh", 0, target="busybox")])
    members = _read_newc(data)
    assert members["bin"][0] == 0o040755
    assert members["init"] == (0o100755, b"#!/bin/sh\n")
    assert members["bin/sh"] == (0o120777, b"busybox")
    assert archive([]) == archive([])  # deterministic: cached initrds keep their hash
