# SPDX-License-Identifier: GPL-2.0-only
"""Links inside test namespaces: creation (pyroute2) and the knobs tests turn.

Every link is created *inside* a test namespace (a veth's two ends may sit in two of them),
never in the root namespace. ``Link`` is a small handle: name + namespace, resolving its
index on demand so it stays valid across renames done through it.
"""

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from netregress import ifreq

if TYPE_CHECKING:
    from .namespace import Namespace

T = TypeVar("T")


@dataclass
class Link:
    """A link in a namespace, addressed by name."""

    ns: "Namespace"
    name: str

    @property
    def index(self) -> int:
        """The link's current index, asked of the kernel on every use (never cached).

        Why an ioctl and not pyroute2's ``link_lookup``: every knob below needs the index,
        and the lookup is a full RTM_GETLINK round trip whose reply (the whole link with
        its statistics) pyroute2 decodes: ~13 ms in a TCG guest, a third of the time spent
        building a topology there. ``SIOCGIFINDEX`` (:mod:`netregress.ifreq`) answers the
        same question in one system call (names and altnames alike, as RTM_GETLINK does).
        """
        return self._by_ioctl(ifreq.index)

    def _by_ioctl(self, request: Callable[[int, str], T]) -> T:
        """*request* (a :mod:`netregress.ifreq` call) on the namespace's route netlink
        socket: an ioctl acts in the namespace of the socket it is issued on, and that socket
        lives in the namespace. No such link is a LookupError naming the namespace."""
        try:
            return request(self.ns.ipr.fileno(), self.name)
        except OSError as exc:
            if exc.errno == errno.ENODEV:
                raise LookupError(f"no link {self.name!r} in netns {self.ns.name}") from None
            raise

    def _info(self) -> Any:
        return self.ns.ipr.get_links(self.index)[0]

    def up(self) -> "Link":
        """``ip link set up``, by ioctl on the namespace's socket (see netregress.ifreq)."""
        self._set_flags(on=ifreq.IFF_UP)
        return self

    def down(self) -> "Link":
        self._set_flags(off=ifreq.IFF_UP)
        return self

    def _set_flags(self, on: int = 0, off: int = 0) -> None:
        self._by_ioctl(lambda fd, name: ifreq.set_flags(fd, name, on, off))

    def set_mtu(self, mtu: int) -> "Link":
        self.ns.ipr.link("set", index=self.index, mtu=mtu)
        return self

    def set_master(self, master: "Link | None") -> "Link":
        self.ns.ipr.link("set", index=self.index, master=master.index if master else 0)
        return self

    def set_mac(self, mac: str) -> "Link":
        self.ns.ipr.link("set", index=self.index, address=mac)
        return self

    def rename(self, new: str) -> "Link":
        """Rename (the link must be down); the handle follows the new name."""
        self.ns.ipr.link("set", index=self.index, ifname=new)
        self.name = new
        return self

    def delete(self) -> None:
        self.ns.ipr.link("del", index=self.index)

    @property
    def mtu(self) -> int:
        return int(self._info().get("IFLA_MTU"))

    @property
    def mac(self) -> str:
        return str(self._info().get("IFLA_ADDRESS"))

    @property
    def is_up(self) -> bool:
        return bool(self._info()["flags"] & 1)

    def stats(self) -> dict[str, int]:
        """Kernel link counters (rx_packets, tx_bytes, rx_dropped, …) as plain ints."""
        return {k: int(v) for k, v in self._info().get("IFLA_STATS64").items()}

    def add_address(self, cidr: str) -> "Link":
        self.ns.add_address(self.name, cidr)
        return self

    def offload(self, **features: bool) -> "Link":
        """Toggle offloads with ethtool, e.g. ``offload(tx=False)`` → ``ethtool -K dev tx off``."""
        args: list[str] = []
        for feature, on in features.items():
            args += [feature.replace("_", "-"), "on" if on else "off"]
        self.ns.run(["ethtool", "-K", self.name, *args])
        return self


class LinkFactoryMixin:
    """Link constructors, mixed into :class:`Namespace` (needs ``self.ipr``, ``self.link()``)."""

    ipr: Any
    link: Callable[[str], Link]

    def _add(self, name: str, kind: str, **attrs: Any) -> Link:
        self.ipr.link("add", ifname=name, kind=kind, **attrs)
        return self.link(name)

    def add_veth(self, name: str, peer_ns: "Namespace", peer_name: str) -> tuple[Link, Link]:
        """A veth pair with *name* here and *peer_name* in *peer_ns* (may be this one)."""
        fd = os.open(peer_ns.path, os.O_RDONLY)
        try:
            self.ipr.link(
                "add", ifname=name, kind="veth", peer={"ifname": peer_name, "net_ns_fd": fd}
            )
        finally:
            os.close(fd)
        return self.link(name), Link(peer_ns, peer_name)

    def add_bridge(
        self,
        name: str,
        ports: tuple[str, ...] | list[str] = (),
        vlan_filtering: bool = False,
        **attrs: Any,
    ) -> Link:
        """A bridge with *ports* enslaved and up.

        VLAN filtering is off by default in the kernel; the attribute is only sent when a
        case asks for it, because kernels built without it reject the attribute outright.
        """
        if vlan_filtering:
            attrs["br_vlan_filtering"] = 1
        br = self._add(name, "bridge", **attrs)
        for port in ports:
            self.link(port).set_master(br).up()
        return br

    def add_vxlan(
        self,
        name: str,
        vni: int,
        *,
        local: str | None = None,
        remote: str | None = None,
        group: str | None = None,
        dstport: int = 4789,
        learning: bool = True,
        dev: str | None = None,
        ttl: int | None = None,
    ) -> Link:
        """A VXLAN device; *remote* (unicast) and *group* (multicast) are exclusive."""
        if remote and group:
            raise ValueError("vxlan: give remote or group, not both")
        attrs: dict[str, Any] = {
            "vxlan_id": vni,
            "vxlan_port": dstport,
            "vxlan_learning": int(learning),
        }
        if local:
            attrs["vxlan_local"] = local
        if remote or group:
            attrs["vxlan_group"] = remote or group
        if dev:
            attrs["vxlan_link"] = self.link(dev).index
        if ttl is not None:
            attrs["vxlan_ttl"] = ttl
        return self._add(name, "vxlan", **attrs)

    def add_ipip(
        self,
        name: str,
        *,
        local: str | None = None,
        remote: str | None = None,
        ttl: int | None = None,
    ) -> Link:
        """An IPIP tunnel; no *remote* means "remote any" (the NBMA style calico uses)."""
        attrs: dict[str, Any] = {}
        if local:
            attrs["ipip_local"] = local
        if remote:
            attrs["ipip_remote"] = remote
        if ttl is not None:
            attrs["ipip_ttl"] = ttl
        return self._add(name, "ipip", **attrs)

    def add_gre(
        self,
        name: str,
        *,
        local: str | None = None,
        remote: str | None = None,
        key: int | None = None,
    ) -> Link:
        """A GRE (layer 3) tunnel, optionally keyed."""
        attrs: dict[str, Any] = {}
        if local:
            attrs["gre_local"] = local
        if remote:
            attrs["gre_remote"] = remote
        if key is not None:
            attrs.update(gre_ikey=key, gre_okey=key, gre_iflags=0x2000, gre_oflags=0x2000)
        return self._add(name, "gre", **attrs)

    def add_dummy(self, name: str) -> Link:
        return self._add(name, "dummy")

    def add_tun(self, name: str) -> Link:
        """A persistent layer-3 tun device (open it with :func:`netns.tun.open_tun`)."""
        return self._add(name, "tuntap", mode="tun")
