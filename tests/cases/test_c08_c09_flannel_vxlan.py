# SPDX-License-Identifier: GPL-2.0-only
"""C08/C09 · flannel-style VXLAN data path, and the blackhole without an FDB entry.

Field story (report 003, lines 6024–6343 and 6064–6129): flannel builds, per node, a
``cni0`` bridge for the pods and a ``flannel.1`` VXLAN device (``vxlan id 1 … dstport 8472
nolearning``, MTU 1450, a /32 address). A remote pod subnet is routed ``via <remote
flannel.1 /32> dev flannel.1 onlink``; flanneld adds a permanent neighbour entry (remote
VTEP MAC) and an FDB entry mapping that MAC to the remote node's underlay IP. The report
walks a ping through tcpdump: TTL 64 in the pod, 63 on flannel.1, 62 at the remote pod;
outer UDP to port 8472 (tcpdump calls it OTV), instance (VNI) 1; SYN ``mss 1410``.

Mechanism: with ``nolearning`` the VXLAN device learns nothing from received packets;
encapsulation only works through the static FDB entry. Without it (C09) the device has no
destination for the VTEP MAC and drops the frame (``tx_dropped``): a silent blackhole.

Oracles (asserted): inner TTL exactly −2 across the overlay; outer UDP dport 8472 with
VNI 1, inner MACs = VTEP MACs, outer TTL 64 (``ttl auto`` on a direct underlay); SYN and
SYN-ACK MSS 1410 (1450 − 40) and the TCP exchange completes; ``bridge fdb show dev
flannel.1`` holds only the static entry after traffic, even after a frame from an inner
source MAC no entry names (nothing learned); the peer's
flannel.1 address x.x.x.0 answers pings (a unicast address since 5.14; 5.10 is a
known difference in ``kernels/expectations.toml``). C09: without flanneld's FDB entry the
ping fails, nothing leaves on 8472, flannel.1 counts tx_dropped — and adding the FDB
entries by hand repairs it.

Broken variants (strict xfail, the same oracle): the inner-TTL oracle without the FDB entry
(C09's blackhole); the outer-header oracle with VTEPs on port 4789; the MSS oracle with pods
left at MTU 1500; the x.x.x.0 oracle with the broadcast route pre-5.14 kernels install for a
subnet's lowest address; the nolearning oracle with learning flannel.1 devices (the
unknown inner source MAC becomes a learned entry); the C09 oracle with the FDB entry in place.
"""

from dataclasses import replace

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import bind_layers

from netns import counters
from netns.packet_lines import Packets
from netns.topology import Network, Topology, Vxlan, shapes
from netns.traffic import TcpEchoServer, inject_frames, ping, poll_until, tcp_echo
from netns.variants import broken

pytestmark = [pytest.mark.vxlan]

bind_layers(UDP, VXLAN, dport=shapes.FLANNEL_PORT)

POD3, POD4 = shapes.pod_ip(3), shapes.pod_ip(4)
_NUD_PERMANENT = 0x80
# An inner source MAC that no FDB entry names: a VTEP flanneld does not know (yet).
_STRANGER_MAC = "02:00:00:c0:08:99"


@pytest.fixture
def flannel(topology) -> Network:
    return topology(shapes.flannel_vxlan())


def _learning(topo: Topology) -> Topology:
    """The same topology with flannel.1 created without ``nolearning`` (a broken variant)."""
    links = tuple(
        replace(link, learning=True) if isinstance(link, Vxlan) else link for link in topo.links
    )
    return replace(topo, name=topo.name + "_learning", links=links)


def _echo(pkts: Packets, icmp_type: int) -> Packets:
    return pkts.where(lambda p: ICMP in p and p[ICMP].type == icmp_type)


@pytest.mark.parametrize(
    "static_fdb",
    [
        pytest.param(True, id="static-fdb"),
        broken(False, id="no-fdb", why="C09: without the FDB entry the overlay is a blackhole"),
    ],
)
def test_c08_inner_ttl_drops_by_two_across_the_overlay(topology, static_fdb: bool) -> None:
    flannel = topology(shapes.flannel_vxlan(static_fdb=static_fdb))
    with (
        flannel["pod3"].capture("eth0", "icmp") as sent,
        flannel["pod4"].capture("eth0", "icmp") as received,
    ):
        assert ping(flannel["pod3"], POD4, count=2)
    ttl_sent = [p[IP].ttl for p in _echo(sent.packets, 8)]
    ttl_received = [p[IP].ttl for p in _echo(received.packets, 8)]
    assert len(ttl_sent) == len(ttl_received) == 2
    # Two routing hops (h3: cni0 → flannel.1, h4: flannel.1 → cni0), nothing else.
    assert [s - r for s, r in zip(ttl_sent, ttl_received, strict=True)] == [2, 2]


@pytest.mark.parametrize(
    "port",
    [
        pytest.param(shapes.FLANNEL_PORT, id="8472"),
        broken(4789, id="iana-port", why="VTEPs on the IANA port 4789 put nothing on 8472"),
    ],
)
def test_c08_outer_header_is_udp_8472_vni_1_between_vteps(topology, port: int) -> None:
    flannel = topology(shapes.flannel_vxlan(port=port))
    with flannel["sw"].capture("u3", f"udp port {shapes.FLANNEL_PORT}") as wire:
        assert ping(flannel["pod3"], POD4, count=1)
    outbound = wire.packets.where(lambda p: VXLAN in p and p[IP].src == shapes.underlay_ip(3))
    assert outbound, f"no VXLAN packet from h3 on the underlay: {wire.packets}"
    for pkt in outbound:
        assert pkt[UDP].dport == shapes.FLANNEL_PORT
        assert pkt[VXLAN].vni == shapes.FLANNEL_VNI
        assert pkt[IP].dst == shapes.underlay_ip(4)
        assert pkt[IP].ttl == 64
        inner = pkt[VXLAN][Ether]
        assert (inner.src, inner.dst) == (shapes.VTEP_MAC[3], shapes.VTEP_MAC[4])
        assert inner[IP].src == POD3 and inner[IP].dst == POD4


@pytest.mark.tcp
@pytest.mark.parametrize(
    "pod_mtu",
    [
        pytest.param(shapes.FLANNEL_MTU, id="pod-mtu-1450"),
        broken(1500, id="pod-mtu-1500", why="pods left at MTU 1500 announce MSS 1460"),
    ],
)
def test_c08_syn_mss_is_1410_and_tcp_works(topology, pod_mtu: int) -> None:
    flannel = topology(shapes.flannel_vxlan(pod_mtu=pod_mtu))
    with (
        TcpEchoServer(flannel["pod4"], POD4, 8080),
        flannel["pod4"].capture("eth0", "tcp[tcpflags] & tcp-syn != 0") as cap,
    ):
        assert tcp_echo(flannel["pod3"], POD4, 8080).ok
    syns = cap.packets.where(lambda p: TCP in p)
    mss = {(p[IP].src, dict(p[TCP].options).get("MSS")) for p in syns}
    assert mss == {(POD3, shapes.FLANNEL_MTU - 40), (POD4, shapes.FLANNEL_MTU - 40)}


@pytest.mark.parametrize(
    "learning",
    [
        pytest.param(False, id="nolearning"),
        broken(
            True,
            id="learning",
            why="a learning flannel.1 adds the unknown inner source MAC to its FDB",
        ),
    ],
)
def test_c08_nolearning_leaves_only_the_static_fdb_entry(topology, learning: bool) -> None:
    """The pods' traffic alone cannot show learning: every inner source MAC in it is a VTEP
    MAC that already has its static entry. So h3's underlay also sends h4 one VXLAN frame
    from a MAC no entry names, as an unknown VTEP would; a learning device adds it."""
    base = shapes.flannel_vxlan()
    flannel = topology(_learning(base) if learning else base)
    assert ping(flannel["pod3"], POD4, count=2)
    h3, h4 = flannel["h3"], flannel["h4"]
    stranger = (
        Ether(src=h3.link("eth0").mac, dst=h4.link("eth0").mac)
        / IP(src=shapes.underlay_ip(3), dst=shapes.underlay_ip(4))
        / UDP(sport=40000, dport=shapes.FLANNEL_PORT)
        / VXLAN(flags="Instance", vni=shapes.FLANNEL_VNI)  # plain VXLAN, not GPE
        / Ether(src=_STRANGER_MAC, dst=shapes.VTEP_MAC[4])
        / IP(src="172.19.3.99", dst=POD4)
        / ICMP(id=8, seq=1)
    )

    def received() -> int:
        return counters.snapshot(h4)["UdpInDatagrams"]

    before = received()
    inject_frames(h3, "eth0", [bytes(stranger)])
    # UDP counts the datagram once the VXLAN socket's receive handler returned, i.e. after the
    # device learned from it (or not), whether or not it then delivered the inner frame.
    assert poll_until(lambda: received() > before, timeout=10), (
        "the frame from the unknown VTEP never reached h4's VXLAN socket"
    )
    for n, peer in ((3, 4), (4, 3)):
        entries = flannel[f"h{n}"].fdb("flannel.1")
        assert [(e["lladdr"], e["dst"]) for e in entries] == [
            (shapes.VTEP_MAC[peer], shapes.underlay_ip(peer))
        ]
        assert entries[0]["state"] & _NUD_PERMANENT
        shown = flannel[f"h{n}"].run(["bridge", "fdb", "show", "dev", "flannel.1"]).stdout
        assert f"dst {shapes.underlay_ip(peer)}" in shown


@pytest.mark.routing
@pytest.mark.parametrize(
    "broadcast_route",
    [
        pytest.param(False, id="kernel-routes"),
        broken(
            True,
            id="dot0-broadcast-route",
            why="a broadcast route for x.x.x.0 (what kernels "
            "before 5.14 install) makes the peer ignore the ping",
        ),
    ],
)
def test_c08_peer_flannel_dot0_address_is_unicast(
    flannel: Network, record_testsuite_property, broadcast_route: bool
) -> None:
    """flannel gives flannel.1 the subnet's x.x.x.0 (/32) while cni0 holds x.x.x.1/24 on
    the same node. Kernels before 5.14 (94c821c74bf5) install a broadcast route for the
    lowest address of a connected subnet, ahead of flannel.1's local route, so the peer
    takes a ping to it for a broadcast and ignores it (icmp_echo_ignore_broadcasts); from
    5.14 on it is unicast and answered. Measured: 5.10 silent (IpExtInBcastPkts +1), 6.1,
    6.12 and 6.18 answer. The broken variant prepends that broadcast route by hand."""
    target = "172.19.4.0"
    h4 = flannel["h4"]
    broadcasts = h4.run(["ip", "-4", "route", "show", "table", "local", "type", "broadcast"])
    if broadcast_route and f"{target} dev cni0" not in broadcasts.stdout:  # before 5.14: there
        h4.run(
            [
                "ip",
                "route",
                "prepend",
                "broadcast",
                target,
                "dev",
                "cni0",
                "table",
                "local",
                "proto",
                "kernel",
                "scope",
                "link",
                "src",
                "172.19.4.1",
            ]
        )
    # A ping h4 took for a broadcast is ignored (icmp_echo_ignore_broadcasts, checked): once
    # h4 counted it, no reply can come.
    ignoring = h4.sysctl("net.ipv4.icmp_echo_ignore_broadcasts") == "1"
    before = counters.snapshot(h4)
    with h4.nstat() as delta:
        answered = ping(
            flannel["h3"], target, count=1, wait=2,
            hopeless=lambda: ignoring and counters.moved(h4, "IpExtInBcastPkts", before) >= 1,
        )  # fmt: skip
    record_testsuite_property("c08_dot0_answered", answered)
    assert delta["IcmpInEchos"] == 1  # it arrives through the overlay either way
    assert answered, f"x.x.x.0 not answered: {delta.nonzero()}"


@pytest.mark.parametrize(
    "static_fdb",
    [
        pytest.param(False, id="no-fdb"),
        broken(True, id="static-fdb", why="with flanneld's FDB entry nothing is blackholed"),
    ],
)
def test_c09_without_fdb_entry_traffic_is_blackholed(topology, static_fdb: bool) -> None:
    """The ping fails, nothing leaves on 8472, flannel.1 counts tx_dropped; adding the FDB
    entries by hand (what flanneld does) repairs it."""
    net = topology(shapes.flannel_vxlan(static_fdb=static_fdb))
    dropped_before = net["h3"].link("flannel.1").stats()["tx_dropped"]
    with net["sw"].capture("u3", f"udp port {shapes.FLANNEL_PORT}") as wire:
        assert not ping(net["pod3"], POD4, count=1, wait=1)
    assert wire.packets == [], "something left on 8472 without an FDB entry"
    assert net["h3"].link("flannel.1").stats()["tx_dropped"] > dropped_before
    assert net["h3"].fdb("flannel.1") == []
    # The repair flanneld performs: the FDB entry on both nodes.
    for n, peer in ((3, 4), (4, 3)):
        net[f"h{n}"].add_fdb("flannel.1", shapes.VTEP_MAC[peer], shapes.underlay_ip(peer))
    assert ping(net["pod3"], POD4, count=1)
