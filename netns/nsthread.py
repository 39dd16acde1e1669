"""Work done inside a network namespace by a short-lived thread, without a new process.

Why a thread: the network namespace belongs to a *thread* (``setns`` and ``unshare`` move
only the caller), and what the work touches (files under ``/proc/sys/net``, a socket being
created, a namespace being bound to a path) acts on the caller's namespace. A process for
that (``ip netns exec``, or the fork pyroute2 makes per namespace and per socket) copies the
whole test process: tens of milliseconds here, a large share of a test in a TCG guest. A
fresh thread enters (or creates) the namespace, does the work and ends, so no other thread
of the test ever changes namespace; what it leaves behind (a bind mount, a socket) keeps the
namespace it was made in.
"""

import ctypes
import os
import threading
from collections.abc import Callable
from typing import TypeVar

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


def _check(result: int, what: str, where: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}", where)


def _in_thread(enter: Callable[[], None], work: Callable[[], T]) -> T:
    """Run ``enter()`` then *work* in a fresh thread; *work*'s result or error comes back."""
    results: list[T] = []
    errors: list[BaseException] = []

    def enter_and_work() -> None:
        try:
            enter()
            results.append(work())
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=enter_and_work, name="netregress-netns")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]


def in_netns(ns_path: str, work: Callable[[], T]) -> T:
    """Run *work* in a fresh thread that first enters the namespace at *ns_path*."""

    def enter() -> None:
        fd = os.open(ns_path, os.O_RDONLY)
        try:
            _check(_libc.setns(fd, _CLONE_NEWNET), "setns", ns_path)
        finally:
            os.close(fd)

    return _in_thread(enter, work)


def in_new_netns(work: Callable[[], T]) -> T:
    """Run *work* in a fresh thread that first moves into a new, empty network namespace.

    The namespace lives on only through what *work* leaves holding it (a bind mount of
    ``/proc/<thread id>/ns/net``, a socket); otherwise it goes away with the thread.
    """
    return _in_thread(lambda: _check(_libc.unshare(_CLONE_NEWNET), "unshare", "netns"), work)
