# SPDX-License-Identifier: GPL-2.0-only
"""The topologies the field cases need, as functions returning a :class:`Topology`.

Addresses follow the field reports where that helps a reader map a capture line to the
report (192.168.0.111 / 192.168.3.113 in the calico case, VNI 1 / port 8472 / MTU 1450 in
the flannel case); everything else uses documentation or private ranges that exist only
inside the test namespaces.
"""

from .model import Bridge, Fdb, Iface, Ipip, LinkSpec, Neigh, Route, Topology, Veth, Vxlan

FORWARDING: dict[str, str | int] = {"net.ipv4.ip_forward": 1}
# New namespaces' rp_filter defaults differ between kernels and distros: pin it.
NO_RP_FILTER: dict[str, str | int] = {
    "net.ipv4.conf.all.rp_filter": 0,
    "net.ipv4.conf.default.rp_filter": 0,
}


def pair(mtu: int | None = None) -> Topology:
    """T1: hosts ``a`` (10.0.0.1, fd00::1) and ``b`` (10.0.0.2, fd00::2) on one veth."""
    return Topology(
        name="pair",
        hosts={"a": {}, "b": {}},
        links=(
            Veth(
                Iface("a", "eth0", ("10.0.0.1/24", "fd00::1/64"), mtu=mtu),
                Iface("b", "eth0", ("10.0.0.2/24", "fd00::2/64"), mtu=mtu),
            ),
        ),
    )


# No IPv6 in a namespace: no router solicitations, MLD reports or DAD on its links.
NO_IPV6: dict[str, str | int] = {
    "net.ipv6.conf.all.disable_ipv6": 1,
    "net.ipv6.conf.default.disable_ipv6": 1,
}


def bridged(n: int = 3, quiet: bool = False) -> Topology:
    """T2: hosts ``h1``..``hN`` (10.0.1.i/24), each with a veth into bridge ``br0`` of ``sw``.

    ``quiet``: no namespace speaks IPv6, so the only frames on the bridge are the case's own
    (what a case about learning, ageing or flooding needs: a router solicitation would
    refresh or flood on its own schedule)."""
    if n < 1:
        raise ValueError("bridged() needs at least one host")
    sysctls = NO_IPV6 if quiet else {}
    hosts: dict[str, dict[str, str | int]] = {"sw": dict(sysctls)}
    links: list[LinkSpec] = []
    for i in range(1, n + 1):
        hosts[f"h{i}"] = dict(sysctls)
        links.append(Veth(Iface(f"h{i}", "eth0", (f"10.0.1.{i}/24",)), Iface("sw", f"p{i}")))
    links.append(Bridge(Iface("sw", "br0"), ports=tuple(f"p{i}" for i in range(1, n + 1))))
    return Topology(name=f"bridged{n}{'-quiet' if quiet else ''}", hosts=hosts, links=tuple(links))


# --- C06: IPIP on a multi-homed host ------------------------------------------------------
N2_UNDERLAY = "192.168.0.111"  # single-homed node2
N4_PRIMARY = "192.168.0.113"  # node4's address its routing picks
N4_REGISTERED = "192.168.3.113"  # node4's address the peer's tunnel knows
ROUTER0, ROUTER3 = "192.168.0.253", "192.168.3.253"
N2_OVERLAY, N4_OVERLAY = "10.122.124.129", "10.122.157.129"


def ipip_multihomed() -> Topology:
    """C06: n2 (one underlay) ↔ n4 (two underlays) via router r; p2p IPIP between them.

    Segments: ``sw`` holds br0 (192.168.0.0/24: n2, n4.eth0, r) and br3 (192.168.3.0/24:
    n4.eth1, r). n2's tunnel ``ipip0`` expects node4 at its *registered* address
    192.168.3.113, but node4's routing sends from 192.168.0.113: the field failure. The
    report's fix (move node4's routes to the 192.168.3.0/24 side) is applied by the case.
    Hosts start with rp_filter off so a case can set the mode it studies.
    """
    return Topology(
        name="ipip_multihomed",
        hosts={"sw": {}, "r": FORWARDING, "n2": dict(NO_RP_FILTER), "n4": dict(NO_RP_FILTER)},
        links=(
            Veth(Iface("n2", "eth0", (f"{N2_UNDERLAY}/24",)), Iface("sw", "n2")),
            Veth(Iface("n4", "eth0", (f"{N4_PRIMARY}/24",)), Iface("sw", "n4a")),
            Veth(Iface("n4", "eth1", (f"{N4_REGISTERED}/24",)), Iface("sw", "n4b")),
            Veth(Iface("r", "eth0", (f"{ROUTER0}/24",)), Iface("sw", "r0")),
            Veth(Iface("r", "eth1", (f"{ROUTER3}/24",)), Iface("sw", "r3")),
            Bridge(Iface("sw", "br0"), ports=("n2", "n4a", "r0")),
            Bridge(Iface("sw", "br3"), ports=("n4b", "r3")),
            Ipip(
                Iface("n2", "ipip0", (f"{N2_OVERLAY}/32",)), local=N2_UNDERLAY, remote=N4_REGISTERED
            ),
            Ipip(Iface("n4", "ipip0", (f"{N4_OVERLAY}/32",)), remote=N2_UNDERLAY),
        ),
        routes=(
            Route("n2", "default", via=ROUTER0),
            Route("n4", "default", via=ROUTER0),
            Route("n2", f"{N4_OVERLAY}/32", dev="ipip0"),
            Route("n4", f"{N2_OVERLAY}/32", dev="ipip0"),
        ),
    )


# --- C08: flannel-style VXLAN --------------------------------------------------------------
VTEP_MAC = {3: "02:00:00:00:03:01", 4: "02:00:00:00:04:01"}
FLANNEL_PORT, FLANNEL_VNI, FLANNEL_MTU = 8472, 1, 1450


def underlay_ip(n: int) -> str:
    return f"10.176.0.{n}"


def pod_ip(n: int) -> str:
    return f"172.19.{n}.2"


def flannel_vxlan(
    static_fdb: bool = True, pod_mtu: int = FLANNEL_MTU, port: int = FLANNEL_PORT
) -> Topology:
    """C08: hosts h3/h4 on an underlay switch; per host cni0 + flannel.1 + one pod.

    flannel.1 is ``vxlan id 1 local <underlay> dev eth0 dstport 8472 nolearning``, MTU 1450,
    a /32 overlay address; remote pod subnets are reached ``via <remote flannel.1> dev
    flannel.1 onlink`` with a permanent neighbour entry and (if *static_fdb*) the FDB entry
    mapping the remote VTEP MAC to its underlay IP. Without it (C09) traffic is blackholed.
    *pod_mtu* (pods, their veths, cni0) and *port* exist for broken variants: pods left at
    1500 by a CNI that forgot the VXLAN overhead, a VTEP on another UDP port.
    """
    hosts: dict[str, dict[str, str | int]] = {"sw": {}}
    links: list[LinkSpec] = []
    routes: list[Route] = []
    neighbours: list[Neigh] = []
    fdb: list[Fdb] = []
    for n, peer in ((3, 4), (4, 3)):
        h, pod = f"h{n}", f"pod{n}"
        hosts[h] = dict(FORWARDING)
        hosts[pod] = {}
        links += [
            Veth(Iface(h, "eth0", (f"{underlay_ip(n)}/24",)), Iface("sw", f"u{n}")),
            Veth(
                Iface(pod, "eth0", (f"{pod_ip(n)}/24",), mtu=pod_mtu),
                Iface(h, f"veth{n}", mtu=pod_mtu),
            ),
            Bridge(Iface(h, "cni0", (f"172.19.{n}.1/24",), mtu=pod_mtu), ports=(f"veth{n}",)),
            Vxlan(
                Iface(h, "flannel.1", (f"172.19.{n}.0/32",), mtu=FLANNEL_MTU, mac=VTEP_MAC[n]),
                vni=FLANNEL_VNI,
                local=underlay_ip(n),
                dstport=port,
                learning=False,
                dev="eth0",
            ),
        ]
        routes += [
            Route(pod, "default", via=f"172.19.{n}.1"),
            Route(h, f"172.19.{peer}.0/24", via=f"172.19.{peer}.0", dev="flannel.1", onlink=True),
        ]
        neighbours.append(Neigh(h, "flannel.1", f"172.19.{peer}.0", VTEP_MAC[peer]))
        if static_fdb:
            fdb.append(Fdb(h, "flannel.1", VTEP_MAC[peer], underlay_ip(peer)))
    links.append(Bridge(Iface("sw", "br0"), ports=("u3", "u4")))
    return Topology(
        name="flannel_vxlan" + ("" if static_fdb else "_nofdb"),
        hosts=hosts,
        links=tuple(links),
        routes=tuple(routes),
        neighbours=tuple(neighbours),
        fdb=tuple(fdb),
    )
