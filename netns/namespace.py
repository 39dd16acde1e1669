# SPDX-License-Identifier: GPL-2.0-only
"""A network namespace owned by this run: the unit every case builds on.

Creation binds the namespace at ``/run/netns/<name>`` like ``ip netns add`` (pyroute2's
``attach``) from the thread that made it (:func:`netregress.netns_entry.in_new_netns`); deletion
goes through pyroute2; commands run inside as if by ``ip netns exec`` (entered without
starting ``ip``: :mod:`netns.commands`, :class:`netregress.process.Process`).
Everything a namespace starts or changes (background processes, sysctls) is undone by
``close()``, and every live namespace is closed at interpreter exit as well, so a failing
test or a Ctrl-C cannot leave anything behind; a SIGKILL is handled by the reaper.

:class:`Namespace` is the :class:`~netns.handle.Handle` that owns this lifecycle, and it
composes the verbs (links, addressing, capture, counters, sockets) as methods, so a case
writes ``ns.add_route(...)``; each verb lives in its own module over the handle.
"""

import atexit
import socket
import threading

from pyroute2 import IPRoute
from pyroute2 import netns as pyroute2_netns

from netregress import naming
from netregress.netns_entry import in_new_netns
from netregress.spans import span

from . import addressing, counters, privilege, sockets, sysctls
from . import links as link_verbs  # `links` is also a method's name in the class body
from .capture import Capture
from .handle import Handle
from .links import Link

_RTNL_BUFFER = 1 << 20

_live: dict[str, "Namespace"] = {}


class Namespace(Handle):
    """A fresh network namespace named ``<run id>-<label>-<n>`` with ``lo`` up."""

    def __init__(self, label: str = "ns") -> None:
        privilege.require_namespaces()
        name = naming.unique(label)
        with span("namespaces"):
            super().__init__(label, name, _attach(name))
            self._sysctl_saved: dict[str, str] = {}
            _live[name] = self
            try:
                self.link("lo").up()
            except BaseException:
                self._remove()
                raise

    def __repr__(self) -> str:
        return f"Namespace({self.name!r})"

    def __enter__(self) -> "Namespace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- sysctls -----------------------------------------------------------------------
    def sysctl(self, key: str) -> str:
        """Current value of a sysctl as seen from inside this namespace."""
        return sysctls.read(self.name, key)

    def set_sysctls(self, values: dict[str, str | int]) -> None:
        """Set several sysctls at once; the first value seen is restored on close.

        Restoring matters for the few ``net.*`` knobs that are global rather than per
        namespace: a test must never leave them changed.
        """
        with span("sysctls"):
            for key in values:
                if key not in self._sysctl_saved:
                    self._sysctl_saved[key] = self.sysctl(key)
            sysctls.write(self.name, {k: str(v) for k, v in values.items()})

    def restore_sysctls(self) -> None:
        """Put back every sysctl changed through :meth:`set_sysctls`."""
        if self._sysctl_saved:
            sysctls.write(self.name, self._sysctl_saved)
            self._sysctl_saved.clear()

    # --- links (netns.links) -----------------------------------------------------------
    def link(self, ifname: str) -> Link:
        """Handle for an existing link in this namespace."""
        return Link(self, ifname)

    links = link_verbs.names
    add_veth = link_verbs.add_veth
    add_bridge = link_verbs.add_bridge
    add_vxlan = link_verbs.add_vxlan
    add_ipip = link_verbs.add_ipip
    add_gre = link_verbs.add_gre
    add_dummy = link_verbs.add_dummy
    add_tun = link_verbs.add_tun

    # --- addressing (netns.addressing) -------------------------------------------------
    add_address = addressing.add_address
    addresses = addressing.addresses
    add_route = addressing.add_route
    routes = addressing.routes
    add_neigh = addressing.add_neigh
    add_fdb = addressing.add_fdb
    fdb = addressing.fdb

    # --- observation -------------------------------------------------------------------
    def capture(self, ifname: str, bpf_filter: str = "") -> Capture:
        """``with ns.capture("eth0", "tcp") as cap:`` — tcpdump here (see netns.capture)."""
        return Capture(self, ifname, bpf_filter)

    def nstat(self) -> counters.Watch:
        """``with ns.nstat() as delta:`` — counter deltas over the block."""
        return counters.Watch(self)

    ss = sockets.ss

    # --- teardown ----------------------------------------------------------------------
    def close(self) -> None:
        """Stop our processes, restore sysctls, delete the namespace (idempotent)."""
        if self.name not in _live:
            return
        with span("namespaces"):
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
        self.ipr.close()
        _unbind(self.name)


def _attach(name: str) -> IPRoute:
    """Create namespace *name* and our IPRoute on a route netlink socket inside it; on failure
    nothing is left behind.

    netns= still names the namespace: pyroute2 does a few requests itself rather than through
    the kernel (tun/tap creation), in a child that enters it.
    """
    rtnl: socket.socket | None = None
    try:
        rtnl = in_new_netns(lambda: _bind_and_open(name))
        return IPRoute(use_socket=rtnl, netns=name)
    except BaseException:
        if rtnl is not None:
            rtnl.close()
        _unbind(name)
        raise


def _bind_and_open(name: str) -> socket.socket:
    """In the thread that made the namespace: bind it to its path and open the route netlink
    socket our IPRoute uses (a socket stays in the namespace it was opened in), with the
    buffer sizes pyroute2 gives the sockets it opens itself.

    Why not ``pyroute2.netns.create`` and ``IPRoute(netns=…)`` alone: each forks the test
    process (pyroute2 has no in-process mode): a fork for every namespace, slow in a TCG
    guest, and the socket's fork is retried after a 2 s timeout.
    """
    pyroute2_netns.attach(name, threading.get_native_id())
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, socket.NETLINK_ROUTE)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _RTNL_BUFFER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RTNL_BUFFER)
    return sock


def _unbind(name: str) -> None:
    """Delete namespace *name* (its path under /run/netns), if it is there."""
    try:
        pyroute2_netns.remove(name)
    except FileNotFoundError:
        pass


@atexit.register
def _close_all() -> None:
    """Last line of defence on normal exit and Ctrl-C: close whatever is still open."""
    for ns in list(_live.values()):
        try:
            ns.close()
        except Exception:
            pass
