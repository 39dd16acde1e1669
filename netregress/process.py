# SPDX-License-Identifier: GPL-2.0-only
"""The process core: every child netregress starts, and what a dead run left behind.

Three rules hold for every process any part of netregress starts (a tcpdump in a test
namespace, the packetdrill binary, QEMU and virtiofsd):

- **It dies with us.** The child asks the kernel for SIGKILL when its parent goes
  (``PR_SET_PDEATHSIG``), so even a SIGKILLed run leaves no process behind, without any
  cleanup code of ours running. The request is made between fork and exec, and a parent that
  died before it is noticed (the child exits instead of running orphaned). The kernel sends
  the signal when the *thread* that spawned the child ends: spawn from a thread that outlives
  the child (the main thread, or a worker that stops its children before returning).
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
this core's ``preexec_fn``: with one, Python forks instead of vforking (8 ms instead of 2 ms a
command, measured with pytest and scapy loaded on a busy 2-CPU machine), and a command that runs
to completion needs no stop. One still running inside a SIGKILLed run's namespace is killed by
the namespace reaper.
"""

import ctypes
import errno
import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from . import naming
from .errors import MissingTool, NetregressError

Argv = Sequence[str] | str
Stream = int | IO[Any] | None

T = TypeVar("T")

NETNS_DIR = "/run/netns"
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_MS_RDONLY = 0x1
_MS_REC = 0x4000
_MS_SLAVE = 0x80000
_MNT_DETACH = 0x2
_libc = ctypes.CDLL(None, use_errno=True)

# Which Debian package provides a tool, for the "how to fix it" part of MissingTool.
_PACKAGES = {
    "ip": "iproute2", "ss": "iproute2", "nstat": "iproute2", "tc": "iproute2",
    "bridge": "iproute2", "tcpdump": "tcpdump", "ethtool": "ethtool",
    "iptables": "iptables", "nft": "nftables", "ping": "iputils-ping",
    "sysctl": "procps", "iperf3": "iperf3", "modprobe": "kmod",
}  # fmt: skip


def require_tool(name: str) -> str:
    """Absolute path of *name*, or MissingTool telling the user which package to install."""
    path = shutil.which(name)
    if path is None:
        pkg = _PACKAGES.get(name, name)
        raise MissingTool(
            f"'{name}' is not installed (Debian package {pkg}); "
            f"run scripts/setup to install everything netregress needs"
        )
    return path


def program(argv: Argv) -> list[str]:
    """*argv* as a list (a string is split like a shell would), its program looked up first.

    A missing tool is then a MissingTool naming its package rather than a FileNotFoundError
    from deep inside subprocess.
    """
    args = shlex.split(argv) if isinstance(argv, str) else list(argv)
    if not args:
        raise ValueError("empty command")
    require_tool(args[0])
    return args


def command_line(args: list[str], ns: str | None = None) -> list[str]:
    """The shell command that runs *args* (a :func:`program`'s list; inside netns *ns* if
    given): what a report shows.

    Inside a namespace that is ``ip netns exec NS …``, which a user can paste to reproduce a
    failure; netregress itself enters the namespace without starting ``ip`` (see
    :func:`enter_netns`).
    """
    return args if ns is None else ["ip", "netns", "exec", ns, *args]


# --- entering a test namespace -------------------------------------------------------------
# Why not run ``ip netns exec NS TOOL``: that is two execs (ip, then the tool), and ip also
# makes a mount namespace with a fresh /sys; in a TCG guest that was 0.26 s a command, the
# largest cost of the cases' bodies. ``setns`` in the starting thread (or in the child before
# exec) does the same for everything a tool reaches through sockets, netlink and /proc.


def netns_path(ns: str) -> str:
    """Where ``ip netns`` and pyroute2 pin namespace *ns*."""
    return os.path.join(NETNS_DIR, ns)


def open_netns(ns: str) -> int:
    """A descriptor of namespace *ns* for :func:`enter_netns`; an OSError naming it if gone."""
    path = netns_path(ns)
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise FileNotFoundError(
            errno.ENOENT, f"network namespace {ns} does not exist", path
        ) from None


def enter_netns(fd: int) -> None:
    """Move the calling *thread* into the network namespace *fd* refers to (``setns``).

    Only that thread moves; a child it starts afterwards is born in the namespace.
    """
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        _raise_errno("setns")


def private_sysfs(ns: str) -> None:
    """In a single-threaded child already in netns *ns*: a mount namespace of its own whose
    /sys shows this namespace's devices, exactly as ``ip netns exec`` sets one up.

    /sys (unlike /proc/net) shows the devices of the namespace that *mounted* it, so a tool
    reading ``/sys/class/net`` after a bare setns would see the initial namespace's devices.
    Where /sys cannot be unmounted (a user namespace inherits it locked) the new instance is
    mounted over it, read-only if the old one was, as ip does.
    """
    if _libc.unshare(_CLONE_NEWNS) != 0:
        _raise_errno("unshare(CLONE_NEWNS)")
    if _libc.mount(b"", b"/", b"none", _MS_SLAVE | _MS_REC, None) != 0:
        _raise_errno("mount --make-rslave /")
    flags = 0
    if _libc.umount2(b"/sys", _MNT_DETACH) != 0 and os.statvfs("/sys").f_flag & os.ST_RDONLY:
        flags = _MS_RDONLY
    if _libc.mount(ns.encode(), b"/sys", b"sysfs", flags, None) != 0:
        _raise_errno("mount of /sys")


def _raise_errno(what: str) -> None:
    code = ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}")


def in_netns(ns: str, work: Callable[[], T]) -> T:
    """Run *work* in a short-lived thread that first enters netns *ns*; returns its result.

    For work that needs the namespace only to *start*: reading /proc/sys/net, or starting a
    child (Python vforks it, which a forked child with a ``preexec_fn`` cannot have), which
    is then born in the namespace and can be waited for from any thread. Not for a child
    that must die with us: the kernel's PDEATHSIG follows the spawning thread, which ends
    here at once. No other thread of ours ever changes namespace.
    """
    fd = open_netns(ns)
    try:
        return _in_thread(lambda: enter_netns(fd), work, f"netregress-in-{ns}")
    finally:
        os.close(fd)


def in_new_netns(work: Callable[[], T]) -> T:
    """Run *work* in a short-lived thread that first moves into a new, empty network
    namespace (``unshare``); returns its result.

    For making a test namespace without forking the test process (pyroute2 forks for it):
    the namespace lives on only through what *work* leaves holding it, such as a bind mount
    of ``/proc/<thread id>/ns/net`` or a socket opened there; otherwise it ends with the
    thread. The caller's thread never changes namespace.
    """

    return _in_thread(unshare_netns, work, "netregress-new-netns")


def unshare_netns() -> None:
    """Move the calling *thread* into a new, empty network namespace (``unshare``)."""
    if _libc.unshare(_CLONE_NEWNET) != 0:
        _raise_errno("unshare(CLONE_NEWNET)")


def _in_thread(enter: Callable[[], None], work: Callable[[], T], name: str) -> T:
    """``enter()`` then *work* in a fresh thread; its result returned, its error raised here."""
    results: list[T] = []
    errors: list[BaseException] = []

    def enter_and_work() -> None:
        try:
            enter()
            results.append(work())
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=enter_and_work, name=name)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]


def die_with_parent(parent: int) -> None:
    """In a forked child: have the kernel SIGKILL us when *parent* dies, even by SIGKILL.

    If *parent* is already gone (it died between fork and this call), exit at once instead of
    running as an orphan nobody will stop.
    """
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


_AUTOGROUP_IDLE = 19  # the lowest nice value of a whole autogroup (/proc/PID/autogroup)


def idle_priority() -> None:
    """A child's *setup* (it runs before exec): run it only on CPU time nobody else wants
    (``SCHED_IDLE``), so that work started ahead of its turn never delays what runs now;
    :func:`lift_priority` ends that (``CAP_SYS_NICE``).

    Why the autogroup too: where the kernel groups tasks by session (``CONFIG_SCHED_AUTOGROUP``,
    on in most distributions) a child in a session of its own (``new_session``) is alone in its
    autogroup, and autogroups share the CPU by their own nice value, whatever the nice values
    and policies inside (measured here: a busy loop in another session halves a task's speed
    at nice 10 or ``SCHED_IDLE`` alike). So a child that leads its own session also gives its
    autogroup the lowest weight. A child in our session shares our autogroup, which is left
    alone."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    if os.getsid(0) == os.getpid():
        _set_autogroup_nice(os.getpid(), _AUTOGROUP_IDLE)


def lift_priority(pid: int) -> None:
    """Undo :func:`idle_priority` for process *pid*: every thread back to
    ``SCHED_OTHER`` (nice values kept), and its own autogroup, if it leads one, to the process's
    nice value. The threads are lifted one by one, so it looks again until none is left idle
    (an idle thread may have started another meanwhile). Raises PermissionError without
    ``CAP_SYS_NICE``, ProcessLookupError once the process is gone."""
    while True:
        try:
            threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
        except FileNotFoundError:
            raise ProcessLookupError(errno.ESRCH, f"no process {pid}") from None
        lifted = 0
        for tid in threads:
            try:
                if os.sched_getscheduler(tid) == os.SCHED_IDLE:
                    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                    lifted += 1
            except ProcessLookupError:  # that thread ended
                continue
        if not lifted:
            break
    if os.getsid(pid) == pid:
        _set_autogroup_nice(pid, os.getpriority(os.PRIO_PROCESS, pid))


def _set_autogroup_nice(pid: int, nice: int) -> None:
    """Without autogroups (no such file) there is nothing to set."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as handle:
            handle.write(str(nice))
    except FileNotFoundError:
        pass


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
