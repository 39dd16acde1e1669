# SPDX-License-Identifier: GPL-2.0-only
"""A network namespace owned by this run: the unit every case builds on.

Creation binds the namespace at ``/run/netns/<name>`` like ``ip netns add`` (pyroute2's
``attach``) from the thread that made it (:func:`netregress.netns_entry.in_new_netns`); deletion
goes through pyroute2; commands run inside as if by ``ip netns exec`` (entered without
starting ``ip``: :mod:`netns.commands`, :class:`netregress.process.Process`).
Everything a namespace starts or changes (background processes, sysctls) is undone by
``close()``, and every live namespace is closed at interpreter exit as well, so a failing
test or a Ctrl-C cannot leave anything behind; a SIGKILL is handled by the reaper.
"""

import atexit
import socket
import subprocess
import threading
from collections.abc import Iterator

from pyroute2 import IPRoute
from pyroute2 import netns as pyroute2_netns

from netregress import naming
from netregress.netns_entry import in_new_netns, netns_path
from netregress.process import Children, Process, Stream
from netregress.programs import Argv

from . import counters, privilege, sockets, sysctls
from .addressing import AddressingMixin
from .capture import Capture
from .commands import CmdResult, cmd
from .links import Link, LinkFactoryMixin

_RTNL_BUFFER = 1 << 20

_live: dict[str, "Namespace"] = {}


class Namespace(AddressingMixin, LinkFactoryMixin):
    """A fresh network namespace named ``<run id>-<label>-<n>`` with ``lo`` up."""

    def __init__(self, label: str = "ns") -> None:
        privilege.require_namespaces()
        self.label = label
        self.name = naming.unique(label)
        self._children = Children()
        self._sysctl_saved: dict[str, str] = {}
        _live[self.name] = self
        try:
            self._rtnl = in_new_netns(self._bind_and_open)
            # netns= still names the namespace: pyroute2 does a few requests itself rather
            # than through the kernel (tun/tap creation), in a child that enters it.
            self.ipr = IPRoute(use_socket=self._rtnl, netns=self.name)
            self.link("lo").up()
        except BaseException:
            self._remove()
            raise

    def _bind_and_open(self) -> socket.socket:
        """In the thread that made the namespace: bind it to its path and open the route
        netlink socket our IPRoute uses (a socket stays in the namespace it was opened in),
        with the buffer sizes pyroute2 gives the sockets it opens itself.

        Why not ``pyroute2.netns.create`` and ``IPRoute(netns=…)`` alone: each forks the
        test process (pyroute2 0.9 has no in-process mode): ~30 ms each natively, ~45 ms
        each in a TCG guest, and the socket's fork is retried after a 2 s timeout.
        """
        pyroute2_netns.attach(self.name, threading.get_native_id())
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, socket.NETLINK_ROUTE)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _RTNL_BUFFER)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RTNL_BUFFER)
        return sock

    def __repr__(self) -> str:
        return f"Namespace({self.name!r})"

    def __enter__(self) -> "Namespace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> str:
        return netns_path(self.name)

    # --- commands ----------------------------------------------------------------------
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

    # --- sysctls -----------------------------------------------------------------------
    def sysctl(self, key: str) -> str:
        """Current value of a sysctl as seen from inside this namespace."""
        return sysctls.read(self.name, key)

    def set_sysctls(self, values: dict[str, str | int]) -> None:
        """Set several sysctls at once; the first value seen is restored on close.

        Restoring matters for the few ``net.*`` knobs that are global rather than per
        namespace: a test must never leave them changed.
        """
        for key in values:
            if key not in self._sysctl_saved:
                self._sysctl_saved[key] = self.sysctl(key)
        sysctls.write(self.name, {k: str(v) for k, v in values.items()})

    def restore_sysctls(self) -> None:
        """Put back every sysctl changed through :meth:`set_sysctls`."""
        if self._sysctl_saved:
            sysctls.write(self.name, self._sysctl_saved)
            self._sysctl_saved.clear()

    # --- links -------------------------------------------------------------------------
    def link(self, ifname: str) -> Link:
        """Handle for an existing link in this namespace."""
        return Link(self, ifname)

    def links(self) -> list[str]:
        """Names of all links in this namespace."""
        return sorted(msg.get("IFLA_IFNAME") for msg in self.ipr.get_links())

    # --- observation -------------------------------------------------------------------
    def capture(self, ifname: str, bpf_filter: str = "") -> Capture:
        """``with ns.capture("eth0", "tcp") as cap:`` — tcpdump here (see netns.capture)."""
        return Capture(self, ifname, bpf_filter)

    def nstat(self) -> counters.Watch:
        """``with ns.nstat() as delta:`` — counter deltas over the block."""
        return counters.Watch(self)

    def ss(self, filter_expr: str = "") -> list[sockets.SocketInfo]:
        """TCP sockets with memory and TCP info (``ss -tmi``)."""
        return sockets.ss(self, filter_expr)

    # --- teardown ----------------------------------------------------------------------
    def close(self) -> None:
        """Stop our processes, restore sysctls, delete the namespace (idempotent)."""
        if self.name not in _live:
            return
        errors = self._children.stop_all()
        try:
            self.restore_sysctls()
        except Exception as exc:
            errors.append(exc)
        self._remove()
        if errors:
            raise errors[0]

    def _remove(self) -> None:
        _live.pop(self.name, None)
        ipr = getattr(self, "ipr", None)
        if ipr is not None:
            ipr.close()
        rtnl = getattr(self, "_rtnl", None)
        if rtnl is not None:
            rtnl.close()  # IPRoute closed it already, unless IPRoute() itself failed
        try:
            pyroute2_netns.remove(self.name)
        except FileNotFoundError:
            pass


def live_namespaces() -> Iterator[Namespace]:
    """Namespaces this process created and has not closed yet."""
    return iter(list(_live.values()))


@atexit.register
def _close_all() -> None:
    """Last line of defence on normal exit and Ctrl-C: close whatever is still open."""
    for ns in list(_live.values()):
        try:
            ns.close()
        except Exception:
            pass
