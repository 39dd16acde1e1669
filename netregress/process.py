# SPDX-License-Identifier: GPL-2.0-only
"""The process core: every child netregress starts, and what a dead run left behind.

Three rules hold for every process any part of netregress starts (a tcpdump in a test
namespace, the packetdrill binary, QEMU and virtiofsd, a kernel build, ``git bisect run``):

- **It dies with us.** The child asks the kernel for SIGKILL when its parent goes
  (``PR_SET_PDEATHSIG``), so even a SIGKILLed run leaves no process behind, without any
  cleanup code of ours running. The request is made between fork and exec, and a parent that
  died before it is noticed (the child exits instead of running orphaned). The kernel sends
  the signal when the *thread* that spawned the child ends: spawn from a thread that outlives
  the child (the main thread, or a worker that stops its children before returning). Work a
  program of somebody else's starts for us (``git bisect run``'s steps) cannot ask that of
  us: it watches its run instead (:func:`exit_with_owner`).
- **It is stopped by PID, never by name.** :meth:`Process.stop` signals through the ``Popen``
  object, which refuses to signal a child it has already waited for, so a recycled PID is never
  hit.
- **A dead run's leftovers are found by name.** Whatever must outlive a SIGKILL to be cleaned
  up (namespaces, the pidfiles of VM processes, a run's output directory) is named after the
  owner's run id (:mod:`netregress.naming`, pid plus start time); :func:`leftovers` picks the names
  whose owner is gone, so a concurrent live run's resources and anything without our prefix are
  never touched. Pidfiles also record the child's own start time, so a recycled PID is never
  killed by the next run either.

Why not in ``netns``: the packetdrill engine spawns through this core in every engine process
and must not import the namespace library (pyroute2, scapy) to do so; see :mod:`netregress`.

``cmd()`` (:mod:`netns.commands`) runs short commands to completion under a timeout without
this core's ``preexec_fn``: with one, Python forks instead of vforking, which costs every
command several times more on a loaded machine, and a command that runs to completion needs no
stop. One still running inside a SIGKILLed run's namespace is killed by the namespace reaper.
"""

import ctypes
import json
import os
import select
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from . import naming
from .errors import NetregressError
from .netns_entry import enter_netns, open_netns, private_sysfs
from .programs import Argv, command_line, program

Stream = int | IO[Any] | None

_PR_SET_PDEATHSIG = 1
_MCL_CURRENT = 1  # mlockall(2): the pages mapped now
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent: int) -> None:
    """In a forked child: have the kernel SIGKILL us when *parent* dies, even by SIGKILL.

    If *parent* is already gone (it died between fork and this call), exit at once instead of
    running as an orphan nobody will stop.
    """
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def own_pages() -> None:
    """In a forked child: copy now every page it still shares with its parent.

    Why: a forked Python child shares its parent's memory copy-on-write, and Python writes to
    every object it touches (reference counts), so it takes a page fault and a copy for each
    page it first uses, at whatever moment that is. A child with timed work ahead (an engine
    run forked from its server) pays them up front instead: measured on the host, a forked
    run without this took twice the page faults of a cold process's run (1,423 against 708).
    ``mlockall`` faults in every writable private page for writing, which breaks the sharing;
    ``munlockall`` lets them be paged as usual again. Best effort: a process that may not lock
    memory keeps the faults for later."""
    if _libc.mlockall(_MCL_CURRENT) == 0:
        _libc.munlockall()


def exit_with_owner(name: str, status: int) -> None:
    """Exit with *status* as soon as the run that owns resource *name* (:func:`naming.unique`)
    ends, even by SIGKILL; at once if it already has.

    For a process another program started on a run's behalf: ``git bisect run`` starts each
    step through its own shell, so the step's parent is not ours and PDEATHSIG cannot reach it.
    A thread waits on the owner's pidfd (no polling); exiting ends the whole process, so the
    children it started through this core die with it.
    """
    owner = naming.owner_of(name)
    if owner is None:
        raise NetregressError(f"{name!r} is not a netregress resource name")
    try:
        handle = os.pidfd_open(owner.pid)
    except ProcessLookupError:
        os._exit(status)
    if not owner.alive():  # the PID is somebody else's now: the owner is gone
        os._exit(status)

    def watch() -> None:
        select.select([handle], [], [])
        os._exit(status)

    threading.Thread(target=watch, name="netregress-owner", daemon=True).start()


class Process(subprocess.Popen[bytes]):
    """A child we started: dies with us, and :meth:`stop` stops it by PID.

    A ``Popen`` itself, so callers wait, poll and read its pipes the usual way.
    """

    def __init__(
        self,
        argv: Argv,
        *,
        ns: str | None = None,
        stdin: Stream = subprocess.DEVNULL,
        stdout: Stream = subprocess.DEVNULL,
        stderr: Stream = subprocess.PIPE,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        new_session: bool = False,
        process_group: int | None = None,
        setup: Callable[[], None] | None = None,
    ) -> None:
        """Start *argv* (inside netns *ns* if given). *setup* runs in the child before exec
        (e.g. a scheduling change); *new_session* keeps a terminal's Ctrl-C from reaching the
        child, so the run stops it in order instead.

        Inside a namespace the child enters it itself before exec (:func:`enter_netns`, with
        the private /sys of :func:`private_sysfs`): what ``ip netns exec`` would do, without
        starting ``ip``. ``argv`` still reads as the ``ip netns exec`` command."""
        self.ns = ns
        args = program(argv)
        self.argv = command_line(args, ns)
        parent = os.getpid()
        netns = None if ns is None else open_netns(ns)

        def child() -> None:
            if ns is not None and netns is not None:
                enter_netns(netns)
                private_sysfs(ns)
            if setup is not None:
                setup()
            die_with_parent(parent)

        try:
            super().__init__(
                args,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env=env,
                preexec_fn=child,
                start_new_session=new_session,
                process_group=process_group,
            )
        finally:
            if netns is not None:
                os.close(netns)

    def running(self) -> bool:
        return self.poll() is None

    def stop(self, sig: int = signal.SIGTERM, grace: float = 5.0) -> int:
        """Send *sig*, wait up to *grace* seconds, then SIGKILL; close our ends of its pipes.

        Returns the exit status. Idempotent: an exited child is never signalled again.
        """
        if self.running():
            self.send_signal(sig)
            try:
                self.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()
                self.wait()
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        return self.returncode


def run(
    argv: Argv,
    *,
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> "subprocess.CompletedProcess[bytes]":
    """``subprocess.run``'s job for a child that runs long (a whole test run, a pipeline): it
    runs to the end as a :class:`Process`, so it dies with us, and is stopped by PID when we are
    interrupted. Its streams are ours unless given, as ``subprocess.run``'s are."""
    proc = Process(argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, env=env)
    try:
        out, err = proc.communicate()
    finally:
        proc.stop()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class Children:
    """The processes one owner started, stopped together (a namespace's, a matrix run's).

    Thread-safe, so matrix workers share one. With *records*, each child is also written to a
    pidfile there, named after our run id, so that if we are SIGKILLed before the kernel's
    PDEATHSIG could act (or it was lost to an exited thread) the next run's
    :func:`reap_records` stops it.
    """

    def __init__(self, records: Path | None = None) -> None:
        self._procs: dict[int, Process] = {}
        self._lock = threading.Lock()
        self._records = records
        self._closed = False

    def spawn(self, argv: Argv, **options: Any) -> Process:
        """Start a :class:`Process` (same options) that belongs to this group."""
        with self._lock:
            if self._closed:
                raise NetregressError("the run was interrupted: no new process is started")
        proc = Process(argv, **options)
        if self._records is not None:
            _record(self._records, proc)
        with self._lock:
            self._procs[proc.pid] = proc
        return proc

    def stop(self, proc: Process, grace: float = 5.0) -> int:
        """Stop one child by PID (see :meth:`Process.stop`) and forget it."""
        status = proc.stop(grace=grace)
        if self._records is not None:
            _record_path(self._records, proc.pid).unlink(missing_ok=True)
        with self._lock:
            self._procs.pop(proc.pid, None)
        return status

    def stop_all(self, grace: float = 5.0) -> list[BaseException]:
        """Stop every child still here, newest first, and refuse new ones.

        Keeps going when one stop fails; returns the errors so the caller can report them
        after the rest is cleaned up.
        """
        with self._lock:
            self._closed = True
            procs = list(self._procs.values())
        errors: list[BaseException] = []
        for proc in reversed(procs):
            try:
                self.stop(proc, grace)
            except Exception as exc:  # keep tearing down; the caller reports
                errors.append(exc)
        return errors


def _record_path(directory: Path, pid: int) -> Path:
    return directory / f"{naming.run_id()}-{pid}.json"


def _record(directory: Path, proc: Process) -> None:
    start = naming.process_start_time(proc.pid)
    # "owner" and "argv" are what older netregress checkouts sharing the cache check before
    # they delete or act on a record; without them such a checkout drops a live run's records.
    record = {"pid": proc.pid, "start": start, "owner": os.getpid(), "argv": proc.argv}
    _record_path(directory, proc.pid).write_text(json.dumps(record))


def leftovers(names: Iterable[str]) -> list[str]:
    """The *names* that carry our prefix and whose owner process is gone, sorted."""
    dead = []
    for name in names:
        owner = naming.owner_of(name)
        if owner is not None and not owner.alive():
            dead.append(name)
    return sorted(dead)


def kill(pids: Iterable[int]) -> None:
    """SIGKILL each PID; one that is already gone is fine."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def reap_records(directory: Path) -> list[int]:
    """Kill the children dead runs recorded in *directory*; returns the PIDs killed.

    A record is acted on only if its run is dead, and its PID is killed only if that process
    still has the recorded start time (so it is still our child, not a recycled PID).
    """
    killed = []
    for name in leftovers(p.name for p in directory.glob("*.json")):
        path = directory / name
        try:
            info = json.loads(path.read_text())
            pid, start = int(info["pid"]), int(info["start"])
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if naming.process_start_time(pid) == start:
            kill([pid])
            killed.append(pid)
        path.unlink(missing_ok=True)
    return killed
