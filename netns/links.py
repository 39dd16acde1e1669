# SPDX-License-Identifier: GPL-2.0-only
"""Links inside test namespaces: creation (pyroute2) and the knobs tests turn.

Every link is created *inside* a test namespace (a veth's two ends may sit in two of them),
never in the root namespace. ``Link`` is a small handle: name + namespace, resolving its
index on demand so it stays valid across renames done through it. The constructors are verbs
over a :class:`~netns.handle.Handle` (``Namespace`` offers each as a method).
"""

import os
from dataclasses import dataclass
from typing import Any

from netregress import ifreq

from . import addressing
from .handle import Handle


@dataclass
class Link:
    """A link in a namespace, addressed by name."""

    ns: Handle
    name: str

    @property
    def index(self) -> int:
        """The link's current index (see :meth:`netns.handle.Handle.index`)."""
        return self.ns.index(self.name)

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
        self.ns.ioctl(self.name, lambda fd, name: ifreq.set_flags(fd, name, on, off))

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
        addressing.add_address(self.ns, self.name, cidr)
        return self

    def offload(self, **features: bool) -> "Link":
        """Toggle offloads with ethtool, e.g. ``offload(tx=False)`` → ``ethtool -K dev tx off``."""
        args: list[str] = []
        for feature, on in features.items():
            args += [feature.replace("_", "-"), "on" if on else "off"]
        self.ns.run(["ethtool", "-K", self.name, *args])
        return self


def names(ns: Handle) -> list[str]:
    """Names of all links in *ns*."""
    return sorted(msg.get("IFLA_IFNAME") for msg in ns.ipr.get_links())


def _add(ns: Handle, name: str, kind: str, **attrs: Any) -> Link:
    ns.ipr.link("add", ifname=name, kind=kind, **attrs)
    return Link(ns, name)


def add_veth(ns: Handle, name: str, peer_ns: Handle, peer_name: str) -> tuple[Link, Link]:
    """A veth pair with *name* here and *peer_name* in *peer_ns* (may be this one)."""
    fd = os.open(peer_ns.path, os.O_RDONLY)
    try:
        ns.ipr.link("add", ifname=name, kind="veth", peer={"ifname": peer_name, "net_ns_fd": fd})
    finally:
        os.close(fd)
    return Link(ns, name), Link(peer_ns, peer_name)


def add_bridge(
    ns: Handle,
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
    br = _add(ns, name, "bridge", **attrs)
    for port in ports:
        Link(ns, port).set_master(br).up()
    return br


def add_vxlan(
    ns: Handle,
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
        attrs["vxlan_link"] = ns.index(dev)
    if ttl is not None:
        attrs["vxlan_ttl"] = ttl
    return _add(ns, name, "vxlan", **attrs)


def add_ipip(
    ns: Handle,
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
    return _add(ns, name, "ipip", **attrs)


def add_gre(
    ns: Handle,
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
    return _add(ns, name, "gre", **attrs)


def add_dummy(ns: Handle, name: str) -> Link:
    return _add(ns, name, "dummy")


def add_tun(ns: Handle, name: str) -> Link:
    """A persistent layer-3 tun device: a program inside *ns* attaches to it by name
    (``/dev/net/tun``, ``TUNSETIFF``) to read and write its packets."""
    return _add(ns, name, "tuntap", mode="tun")
