# SPDX-License-Identifier: GPL-2.0-only
"""The matrix's children are recorded for the next run; a dead run's directories are reaped;
a VM session does both around every command that boots guests.

The process core's own guarantees (PDEATHSIG, stop by PID, record reaping) are proven in
test_process.py."""

import subprocess
from pathlib import Path

import pytest

from kernels import tools
from kernels.errors import KernelsError
from kernels.vm import procs
from kernels.vm.cpio import Entry, archive, directory
from kernels.vm.procs import Children, reap_leftovers, run_dir, scratch_dir
from kernels.vm.session import vm_session
from netregress import naming
from netregress.errors import NetregressError


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_stop_all_stops_children_and_refuses_new_ones(tmp_path: Path) -> None:
    children = Children()
    procs = [children.spawn(["sleep", "60"]) for _ in range(2)]
    piddir = tmp_path / "cache/netregress/kernels/pids"
    assert sorted(p.name for p in piddir.iterdir()) == sorted(
        f"{naming.run_id()}-{p.pid}.json" for p in procs
    )  # the next run's reaping needs them
    children.stop_all()
    assert all(p.returncode is not None for p in procs)
    assert not list(piddir.iterdir())
    with pytest.raises(NetregressError, match="interrupted"):
        children.spawn(["sleep", "60"])


def test_reap_drops_dead_runs_directories_only(tmp_path: Path) -> None:
    """A dead run's guest output and VM scratch directories go; ours (alive) and those
    without our prefix stay."""
    proc = subprocess.Popen(["sleep", "60"])
    dead = f"{naming.PREFIX}{proc.pid}s{naming.process_start_time(proc.pid)}"
    proc.kill()
    proc.wait()
    cache = tmp_path / "cache/netregress/kernels"
    (cache / "runs" / f"{dead}-bookworm-6.1").mkdir(parents=True)
    (cache / "runs" / "linux-6.1-stock").mkdir()  # a built kernel's (check-reintroduced-bug)
    (cache / "run" / f"{dead}-0123456789ab").mkdir(parents=True)
    (cache / "run" / "tmpabcd").mkdir()  # a TemporaryDirectory of a probe
    mine = [run_dir("bookworm-6.1"), scratch_dir()]
    assert reap_leftovers() == []
    assert sorted(p.name for p in (cache / "runs").iterdir()) == sorted(
        ["linux-6.1-stock", mine[0].name]
    )
    kept = [mine[1].name] if mine[1].parent == cache / "run" else []  # else a deep cache's
    assert sorted(p.name for p in (cache / "run").iterdir()) == sorted(["tmpabcd", *kept])


def test_a_deep_cache_puts_the_sockets_where_their_paths_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """virtiofsd refuses a socket path longer than sun_path (a CI job's cache lives deep in its
    project directory): the scratch directory moves to a short folder, and is reaped there."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ("deep" * 20)))
    work = scratch_dir()
    try:
        assert work.parent == procs.SHORT_RUN_DIR
        assert len(str(work / "root.sock")) <= 107
    finally:
        work.rmdir()
    proc = subprocess.Popen(["sleep", "60"])
    dead = f"{naming.PREFIX}{proc.pid}s{naming.process_start_time(proc.pid)}"
    proc.kill()
    proc.wait()
    (procs.SHORT_RUN_DIR / f"{dead}-0123456789ab").mkdir(parents=True)
    reap_leftovers()
    assert not (procs.SHORT_RUN_DIR / f"{dead}-0123456789ab").exists()


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
    data = archive(
        [
            directory("bin"),
            Entry("init", 0o755, b"#!/bin/sh\n"),
            Entry("bin/sh", 0, target="busybox"),
        ]
    )
    members = _read_newc(data)
    assert members["bin"][0] == 0o040755
    assert members["init"] == (0o100755, b"#!/bin/sh\n")
    assert members["bin/sh"] == (0o120777, b"busybox")
    assert archive([]) == archive([])  # deterministic: cached initrds keep their hash


def test_a_vm_session_reaps_on_opening_and_stops_its_children_however_it_ends(
    tmp_path: Path,
) -> None:
    """What every command that boots guests relies on: a dead run's leftovers are gone once
    the session is open, and an error inside it still stops every child it started."""
    proc = subprocess.Popen(["sleep", "60"])
    dead = f"{naming.PREFIX}{proc.pid}s{naming.process_start_time(proc.pid)}"
    proc.kill()
    proc.wait()
    leftover = tmp_path / "cache/netregress/kernels/runs" / f"{dead}-bookworm-6.1"
    leftover.mkdir(parents=True)
    started = []
    with pytest.raises(RuntimeError, match="a guest failed"), vm_session(smp=2) as vm:
        assert not leftover.exists()
        assert vm.launcher.children is vm.children and vm.launcher.smp == 2
        started.append(vm.children.spawn(["sleep", "60"]))
        assert started[0].poll() is None
        raise RuntimeError("a guest failed")
    assert started[0].returncode is not None
    with pytest.raises(NetregressError, match="interrupted"):
        vm.children.spawn(["sleep", "60"])
