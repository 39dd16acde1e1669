# SPDX-License-Identifier: GPL-2.0-only
"""Entering a network namespace from this process: a thread, or a child before it execs.

Why not run ``ip netns exec NS TOOL``: that is two execs (ip, then the tool), and ip also
makes a mount namespace with a fresh /sys, which in a TCG guest costs more than most of a
case's body. ``setns`` in the starting thread (or in the child before exec) does the same for
everything a tool reaches through sockets, netlink and /proc; a child that reads /sys gets the
private mount ip would have made (:func:`private_sysfs`).

Only a short-lived thread of ours ever changes namespace (:func:`in_netns`,
:func:`in_new_netns`), so the threads that run tests never do.
"""

import ctypes
import errno
import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

NETNS_DIR = "/run/netns"
_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_MS_RDONLY = 0x1
_MS_REC = 0x4000
_MS_SLAVE = 0x80000
_MNT_DETACH = 0x2
_libc = ctypes.CDLL(None, use_errno=True)


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
