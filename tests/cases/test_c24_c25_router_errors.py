# SPDX-License-Identifier: GPL-2.0-only
"""C24, C25 · What a router tells the sender when it will not forward a packet.

C24 · a ``prohibit`` route answers "administratively prohibited". Operators block prefixes
on routers (and Kubernetes network plugins block pod ranges) with ``ip route add prohibit``
so that clients fail fast with a clear reason (ping: "Packet filtered", TCP: EACCES-like
"No route to host" at once) instead of timing out. Mechanism: the route's type makes
``ip_error()`` send ICMP destination unreachable with code 13 (communication administratively
prohibited); ``unreachable`` sends code 1 (host unreachable), ``blackhole`` nothing.
Oracle: a client's ping through the router to the prohibited prefix draws exactly one ICMP
error from the router, code 13. The broken variant makes it an ``unreachable`` route
(code 1), a strict xfail.

C25 · a route's ``mtu`` metric limits what the router forwards. A smaller MTU on one route
(an IPsec or tunnel next hop, a provider link) is set with ``ip route … mtu N``; a router
must then answer a too-big DF packet with ICMP "fragmentation needed" carrying that MTU, or
path MTU discovery never learns it and large transfers black-hole. Mechanism: ``ip_forward()``
compares the packet with ``ip_dst_mtu_maybe_forward()``, which honours the route's
RTAX_MTU metric. Oracle: a 1400-byte DF ping to a host behind a ``mtu 1300`` route is
answered by the router with ICMP type 3 code 4, next-hop MTU 1300, and no echo reply. The
broken variant sets the route's MTU to 1500 (the packet fits, the host answers), a strict xfail.
"""

import pytest
from scapy.layers.inet import ICMP, IP
from scapy.packet import Packet

from netns.topology import Iface, Route, Topology, Veth
from netns.variants import broken

pytestmark = [pytest.mark.routing]

CLIENT, ROUTER_IN, ROUTER_OUT, SERVER = "10.0.0.1", "10.0.0.254", "10.0.2.254", "10.0.2.2"
BLOCKED = "10.9.9.0/24"


def line() -> Topology:
    """client ─ router (forwarding) ─ server, each side its own /24."""
    return Topology(
        name="line",
        hosts={"client": {}, "router": {"net.ipv4.ip_forward": 1}, "server": {}},
        links=(
            Veth(
                Iface("client", "eth0", (f"{CLIENT}/24",)),
                Iface("router", "eth0", (f"{ROUTER_IN}/24",)),
            ),
            Veth(
                Iface("router", "eth1", (f"{ROUTER_OUT}/24",)),
                Iface("server", "eth0", (f"{SERVER}/24",)),
            ),
        ),  # fmt: skip
        routes=(
            Route("client", "default", via=ROUTER_IN),
            Route("server", "default", via=ROUTER_OUT),
        ),
    )


def _unreachables(packets: list[Packet]) -> list[tuple[str, int, int]]:
    """(source, code, next-hop MTU) of every ICMP destination unreachable seen."""
    return [
        (p[IP].src, int(p[ICMP].code), int(p[ICMP].nexthopmtu))
        for p in packets
        if ICMP in p and p[ICMP].type == 3
    ]


@pytest.mark.parametrize(
    "route_type",
    [
        "prohibit",
        broken("unreachable", id="unreachable", why="an unreachable route answers code 1, not 13"),
    ],
)
def test_c24_prohibit_route_answers_administratively_prohibited(topology, route_type: str) -> None:
    net = topology(line())
    client, router = net["client"], net["router"]
    router.add_route(BLOCKED, type=route_type)
    with client.capture("eth0", "icmp") as cap:
        client.run(["ping", "-n", "-c", "1", "-W", "1", "10.9.9.9"], check=False)
        cap.wait_for(lambda p: ICMP in p and p[ICMP].type == 3, timeout=2)
    assert [(src, code) for src, code, _ in _unreachables(cap.packets)] == [(ROUTER_IN, 13)]


@pytest.mark.parametrize(
    "route_mtu",
    [
        1300,
        broken(1500, id="mtu1500", why="the 1400-byte packet fits: forwarded and answered"),
    ],
)
def test_c25_route_mtu_metric_limits_forwarding(topology, route_mtu: int) -> None:
    net = topology(line())
    client, router = net["client"], net["router"]
    router.add_route(f"{SERVER}/32", dev="eth1", metrics={"mtu": route_mtu})
    with client.capture("eth0", "icmp") as cap:
        client.run(
            ["ping", "-n", "-M", "do", "-s", "1372", "-c", "1", "-W", "1", SERVER], check=False
        )
        cap.wait_for(lambda p: ICMP in p and p[ICMP].type in (0, 3), timeout=2)
    replies = cap.packets.where(lambda p: ICMP in p and p[ICMP].type == 0)
    assert _unreachables(cap.packets) == [(ROUTER_IN, 4, 1300)]
    assert replies == []
