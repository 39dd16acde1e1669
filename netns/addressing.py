# SPDX-License-Identifier: GPL-2.0-only
"""Addresses, routes, neighbours and FDB entries of a namespace, through netlink.

Verbs over a :class:`~netns.handle.Handle` (``Namespace`` offers each as a method). Route
options mirror ``ip route`` (via, dev, src, onlink, table, type, metrics such as quickack)
because the field reports are written in that vocabulary and a reader should be able to map
each call to the report's command.
"""

import ipaddress
from typing import Any

from .handle import Handle

_RTNH_F_ONLINK = 4
_AF_BRIDGE = 7


def add_address(ns: Handle, ifname: str, cidr: str) -> None:
    """``ip addr add CIDR dev IFNAME`` (IPv6 without DAD, so it is usable at once)."""
    iface = ipaddress.ip_interface(cidr)
    extra: dict[str, Any] = {}
    if iface.version == 6:
        extra["flags"] = 0x02  # IFA_F_NODAD: tests must not wait for DAD
    ns.ipr.addr(
        "add",
        index=ns.index(ifname),
        address=str(iface.ip),
        prefixlen=iface.network.prefixlen,
        **extra,
    )


def addresses(ns: Handle, ifname: str | None = None) -> list[str]:
    """Addresses as ``ip/prefix`` strings, optionally of one link."""
    kw = {"index": ns.index(ifname)} if ifname else {}
    return [f"{m.get('IFA_ADDRESS')}/{m['prefixlen']}" for m in ns.ipr.get_addr(**kw)]


def add_route(
    ns: Handle,
    dst: str,
    *,
    via: str | None = None,
    dev: str | None = None,
    src: str | None = None,
    onlink: bool = False,
    table: int | None = None,
    type: str = "unicast",
    metrics: dict[str, int] | None = None,
) -> None:
    """``ip route add DST [via] [dev] [src] [onlink] [table] [quickack 1 …]``.

    *metrics* takes ``ip route`` names without the RTAX_ prefix, e.g.
    ``{"quickack": 1, "initcwnd": 10}``. Kernel refusals surface as pyroute2's
    NetlinkError with the kernel's errno, which cases may record and assert.
    """
    kw: dict[str, Any] = {"dst": "default" if dst == "default" else dst, "type": type}
    if via:
        kw["gateway"] = via
    if dev:
        kw["oif"] = ns.index(dev)
    if src:
        kw["prefsrc"] = src
    if onlink:
        kw["flags"] = _RTNH_F_ONLINK
    if table is not None:
        kw["table"] = table
    if metrics:
        kw["metrics"] = {f"RTAX_{k.upper()}": v for k, v in metrics.items()}
    ns.ipr.route("add", **kw)


def routes(ns: Handle, family: int = 2) -> list[dict[str, Any]]:
    """Main-table routes as dicts (dst, gateway, oif, prefsrc, type) for assertions."""
    out = []
    for m in ns.ipr.get_routes(family=family, table=254):
        dst = m.get("RTA_DST")
        out.append(
            {
                "dst": f"{dst}/{m['dst_len']}" if dst else "default",
                "gateway": m.get("RTA_GATEWAY"),
                "oif": m.get("RTA_OIF"),
                "prefsrc": m.get("RTA_PREFSRC"),
                "type": m["type"],
            }
        )
    return out


def add_neigh(ns: Handle, ifname: str, dst: str, lladdr: str) -> None:
    """A permanent neighbour entry (``ip neigh add DST lladdr MAC dev IFNAME nud
    permanent``)."""
    ns.ipr.neigh("add", ifindex=ns.index(ifname), dst=dst, lladdr=lladdr, state=0x80)


def add_fdb(ns: Handle, ifname: str, lladdr: str, dst: str | None = None) -> None:
    """``bridge fdb append MAC dev IFNAME [dst IP] self permanent`` (VXLAN remote entries)."""
    kw: dict[str, Any] = {
        "ifindex": ns.index(ifname),
        "lladdr": lladdr,
        "state": 0x80,
        "flags": 0x02,
    }  # NUD_PERMANENT, NTF_SELF
    if dst:
        kw["dst"] = dst
    ns.ipr.fdb("append", **kw)


def fdb(ns: Handle, ifname: str) -> list[dict[str, Any]]:
    """FDB entries *of one device* (``bridge fdb show dev X``; see C09's syntax trap)."""
    index = ns.index(ifname)
    entries: list[dict[str, Any]] = []
    for m in ns.ipr.get_neighbours(family=_AF_BRIDGE):
        entry = {
            "lladdr": m.get("NDA_LLADDR"),
            "dst": m.get("NDA_DST"),
            "state": m["state"],
            "flags": m["flags"],
        }
        # The dump may report one entry more than once; a list of distinct ones is
        # what "no learned entries" style oracles need.
        if m["ifindex"] == index and entry not in entries:
            entries.append(entry)
    return entries
