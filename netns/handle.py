# SPDX-License-Identifier: GPL-2.0-only
"""A namespace as the verbs see it: its name, its route netlink socket, programs run inside.

Links, addresses, captures, counters and sockets are verbs over a :class:`Handle`
(:mod:`netns.links`, :mod:`netns.addressing`, :mod:`netns.capture`, …), and
:class:`netns.namespace.Namespace`, the handle that also creates and removes its namespace,
composes them. Why this split: each verb needs only what is here, so none of them imports the
class that offers it as a method, and a new verb is one module over this one.
"""

import errno
import subprocess
from collections.abc import Callable
from typing import TypeVar

from pyroute2 import IPRoute

from netregress import ifreq
from netregress.netns_entry import netns_path
from netregress.process import Children, Process, Stream
from netregress.programs import Argv

from .commands import CmdResult, cmd

T = TypeVar("T")


class Handle:
    """A live network namespace named *name*, with *ipr* bound to it.

    *label* is the short name a case gave it, used for artifact file names.
    """

    def __init__(self, label: str, name: str, ipr: IPRoute) -> None:
        self.label = label
        self.name = name
        self.ipr = ipr
        self._children = Children()

    @property
    def path(self) -> str:
        return netns_path(self.name)

    def run(
        self, argv: Argv, *, check: bool = True, timeout: float = 60, input: str | None = None
    ) -> CmdResult:
        """Run a command inside this namespace (see :func:`netns.commands.cmd`)."""
        return cmd(argv, ns=self.name, check=check, timeout=timeout, input=input)

    def spawn(
        self, argv: Argv, *, stdout: Stream = subprocess.DEVNULL, stderr: Stream = subprocess.PIPE
    ) -> Process:
        """Start a background process inside; it is stopped when the namespace closes."""
        return self._children.spawn(argv, ns=self.name, stdout=stdout, stderr=stderr)

    def index(self, ifname: str) -> int:
        """The current index of link *ifname*, asked of the kernel on every use (never cached,
        so a handle stays valid across renames).

        Why an ioctl and not pyroute2's ``link_lookup``: every link knob needs the index, and
        the lookup is a full RTM_GETLINK round trip whose reply (the whole link with its
        statistics) pyroute2 decodes, a large share of building a topology in a TCG guest.
        ``SIOCGIFINDEX`` (:mod:`netregress.ifreq`) answers the same question in one system
        call (names and altnames alike, as RTM_GETLINK does).
        """
        return self.ioctl(ifname, ifreq.index)

    def ioctl(self, ifname: str, request: Callable[[int, str], T]) -> T:
        """*request* (a :mod:`netregress.ifreq` call) for link *ifname* on the route netlink
        socket: an ioctl acts in the namespace of the socket it is issued on, and that socket
        lives in this namespace. No such link is a LookupError naming the namespace."""
        try:
            return request(self.ipr.fileno(), ifname)
        except OSError as exc:
            if exc.errno == errno.ENODEV:
                raise LookupError(f"no link {ifname!r} in netns {self.name}") from None
            raise
