# SPDX-License-Identifier: GPL-2.0-only
"""Turn a :class:`Topology` into running namespaces, and tear them down as a unit.

Order matters to the kernel: links must exist before they are enslaved or used as a
tunnel's underlay, and addresses must be up before a route through them is accepted, so
the builder goes hosts → links (listed order) → MTU/MAC/addresses/up → routes →
neighbours → FDB. Any failure tears down what was built and re-raises.
"""

from collections.abc import Callable

from netregress.spans import span

from .. import features
from ..errors import FeatureMissing
from ..namespace import Namespace
from .model import Bridge, Dummy, Existing, Gre, Ipip, LinkSpec, Topology, Veth, Vxlan


class Network:
    """A built topology: ``net["a"]`` is host a's :class:`Namespace`."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.hosts: dict[str, Namespace] = {}

    def __getitem__(self, host: str) -> Namespace:
        return self.hosts[host]

    def __enter__(self) -> "Network":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Delete every namespace (links inside go with them); first error re-raised."""
        errors: list[Exception] = []
        for ns in reversed(list(self.hosts.values())):
            try:
                ns.close()
            except Exception as exc:
                errors.append(exc)
        self.hosts.clear()
        if errors:
            raise errors[0]


def _create(net: Network, spec: LinkSpec) -> None:
    iface = spec.ifaces[0]
    ns = net[iface.host]
    if isinstance(spec, Veth):
        ns.add_veth(spec.a.name, net[spec.b.host], spec.b.name)
    elif isinstance(spec, Bridge):
        ns.add_bridge(iface.name, spec.ports)
    elif isinstance(spec, Vxlan):
        ns.add_vxlan(
            iface.name,
            spec.vni,
            local=spec.local,
            remote=spec.remote,
            group=spec.group,
            dstport=spec.dstport,
            learning=spec.learning,
            dev=spec.dev,
        )
    elif isinstance(spec, Ipip):
        ns.add_ipip(iface.name, local=spec.local, remote=spec.remote)
    elif isinstance(spec, Gre):
        ns.add_gre(iface.name, local=spec.local, remote=spec.remote, key=spec.key)
    elif isinstance(spec, Dummy):
        ns.add_dummy(iface.name)
    elif not isinstance(spec, Existing):
        raise TypeError(f"unknown link spec {spec!r}")


def build(topology: Topology, on_host: Callable[[Namespace], None] | None = None) -> Network:
    """Build *topology*; raises FeatureMissing (before creating anything) if the kernel
    lacks a link type it needs. *on_host* runs on each namespace right after creation."""
    topology.validate()
    reason = features.missing_reason(*topology.features())
    if reason:
        raise FeatureMissing(f"topology {topology.name}: {reason}")
    net = Network(topology)
    try:
        for host, sysctls in topology.hosts.items():
            ns = net.hosts[host] = Namespace(host)
            if sysctls:
                ns.set_sysctls(sysctls)
            if on_host:
                on_host(ns)
        with span("topology"):
            _links(net, topology)
    except BaseException:
        net.close()
        raise
    return net


def _links(net: Network, topology: Topology) -> None:
    """Links, their addresses, routes, neighbours and FDB entries, in the kernel's order."""
    for spec in topology.links:
        _create(net, spec)
    for spec in topology.links:
        for iface in spec.ifaces:
            link = net[iface.host].link(iface.name)
            if iface.mtu:
                link.set_mtu(iface.mtu)
            if iface.mac:
                link.set_mac(iface.mac)
            for cidr in iface.addrs:
                link.add_address(cidr)
            if iface.up:
                link.up()
    for r in topology.routes:
        net[r.host].add_route(
            r.dst,
            via=r.via,
            dev=r.dev,
            src=r.src,
            onlink=r.onlink,
            table=r.table,
            type=r.type,
            metrics=dict(r.metrics),
        )
    for n in topology.neighbours:
        net[n.host].add_neigh(n.dev, n.dst, n.lladdr)
    for f in topology.fdb:
        net[f.host].add_fdb(f.dev, f.lladdr, f.dst)
