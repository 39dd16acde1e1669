# SPDX-License-Identifier: GPL-2.0-only
"""The declarative description of a topology: plain frozen data, no kernel calls.

A case states *what* it needs (hosts, links with their addresses, routes, neighbours, FDB
entries, sysctls); :mod:`netns.topology.builder` turns that into namespaces. Keeping the
description inert means a shape can be printed, compared, and checked for the kernel
features it needs before anything is created.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Iface:
    """An interface of a host: where it lives, what it is called, how it is configured."""

    host: str
    name: str
    addrs: tuple[str, ...] = ()
    mtu: int | None = None
    mac: str | None = None
    up: bool = True


@dataclass(frozen=True)
class Veth:
    a: Iface
    b: Iface
    feature = "veth"

    @property
    def ifaces(self) -> tuple[Iface, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class _Single:
    iface: Iface

    @property
    def ifaces(self) -> tuple[Iface, ...]:
        return (self.iface,)


@dataclass(frozen=True)
class Bridge(_Single):
    ports: tuple[str, ...] = ()
    feature = "bridge"


@dataclass(frozen=True)
class Vxlan(_Single):
    vni: int = 1
    local: str | None = None
    remote: str | None = None
    group: str | None = None
    dstport: int = 4789
    learning: bool = True
    dev: str | None = None
    feature = "vxlan"


@dataclass(frozen=True)
class Ipip(_Single):
    local: str | None = None
    remote: str | None = None
    feature = "ipip"


@dataclass(frozen=True)
class Gre(_Single):
    local: str | None = None
    remote: str | None = None
    key: int | None = None
    feature = "gre"


@dataclass(frozen=True)
class Dummy(_Single):
    feature = "dummy"


@dataclass(frozen=True)
class Existing(_Single):
    """Configure a link the kernel made on its own (``tunl0`` in a new namespace)."""

    feature = ""


LinkSpec = Veth | Bridge | Vxlan | Ipip | Gre | Dummy | Existing


@dataclass(frozen=True)
class Route:
    host: str
    dst: str
    via: str | None = None
    dev: str | None = None
    src: str | None = None
    onlink: bool = False
    table: int | None = None
    type: str = "unicast"
    metrics: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Neigh:
    host: str
    dev: str
    dst: str
    lladdr: str


@dataclass(frozen=True)
class Fdb:
    host: str
    dev: str
    lladdr: str
    dst: str | None = None


@dataclass(frozen=True)
class Topology:
    """Hosts (name → sysctls), then links, routes, neighbours, FDB entries, in build order."""

    name: str
    hosts: dict[str, dict[str, str | int]]
    links: tuple[LinkSpec, ...] = ()
    routes: tuple[Route, ...] = ()
    neighbours: tuple[Neigh, ...] = ()
    fdb: tuple[Fdb, ...] = field(default=())

    def features(self) -> list[str]:
        """Kernel features this topology needs, in first-use order (for skip reasons)."""
        seen: list[str] = []
        for link in self.links:
            if link.feature and link.feature not in seen:
                seen.append(link.feature)
        return seen

    def validate(self) -> None:
        """Reject references to unknown hosts before any namespace is created."""
        refs = [i.host for link in self.links for i in link.ifaces]
        refs += [r.host for r in self.routes] + [n.host for n in self.neighbours]
        refs += [f.host for f in self.fdb]
        unknown = sorted(set(refs) - set(self.hosts))
        if unknown:
            raise ValueError(f"topology {self.name}: unknown host(s) {', '.join(unknown)}")
