# SPDX-License-Identifier: GPL-2.0-only
"""C04/C05 · calico IPIP: the nexthop of a ``tunl0`` route must be the peer's underlay IP
(``onlink``), and a gateway outside every connected prefix needs ``onlink`` to be accepted.

C04 field story (report 003, lines 5353–5396): five hosts 192.168.3.110–114, one calico
/26 per host, IPIP through the fallback device ``tunl0`` (no remote: NBMA). On host .112
the route to the other block was ``10.122.17.64/26 via 10.122.127.128 dev tunl0`` — an
*overlay* address as gateway. The ICMP request arrived, but "the reply was never
IPIP-encapsulated and sent out eth1". Replacing it with ``via 192.168.3.110 dev tunl0
onlink`` made it work. Mechanism: an NBMA ipip device takes the outer destination from the
route's nexthop; with an overlay (here: local) gateway the encapsulated reply is addressed
to the host itself and never reaches the wire.

C05 (003, 5393–5396): tunl0 (and flannel.1) carry a /32, so no gateway is on a connected
prefix: without ``onlink`` the kernel refuses the route ("a gateway outside the local
subnets is considered unreachable"); ``onlink`` skips that check. A host-gw style route via
a gateway on a connected subnet needs no ``onlink``.

Oracles (asserted): with ``via <underlay> onlink`` the requests arrive IPIP-encapsulated,
ping works and the captured reply is IPIP from 192.168.3.112 to 192.168.3.110 carrying
10.122.127.128 → 10.122.17.64; the broken variant (the report's overlay gateway: the reply
is never encapsulated onto the wire) runs the same oracle as a strict xfail. Without ``onlink``
the route add fails with *some* netlink error — errno and iproute2's message are recorded
(``record_testsuite_property``, which JUnit xunit2 keeps), not hard-coded (ENETUNREACH,
"Nexthop has invalid gateway." on 5.10, 6.1 and 6.18) — and with ``onlink`` the route is
accepted and shown as ``onlink``; the broken variant puts the gateway's /24 on the device
too, so the route is accepted without onlink (strict xfail). The C05 part also runs on a /32
VXLAN device, so it needs no ipip module.
"""

import pytest
from pyroute2.netlink.exceptions import NetlinkError
from scapy.layers.inet import ICMP, IP

from netns import Namespace
from netns.topology import Bridge, Existing, Iface, Ipip, Route, Topology, Veth
from netns.traffic import ping
from netns.variants import broken

H110, H112 = "192.168.3.110", "192.168.3.112"
POD110, POD112 = "10.122.17.64", "10.122.127.128"  # tunl0 addresses (first IP of each block)
BLOCK110, BLOCK112 = "10.122.17.64/26", "10.122.127.128/26"
FB_SYSCTL = "/proc/sys/net/core/fb_tunnels_only_for_init_net"


def fallback_in_new_namespaces() -> bool:
    """Does the kernel create ``tunl0`` in new namespaces? (sysctl absent before 4.17: yes)."""
    try:
        with open(FB_SYSCTL, encoding="ascii") as f:
            return f.read().strip() == "0"
    except FileNotFoundError:
        return True


def tunl0(host: str, addr: str) -> Existing | Ipip:
    """The host's ``tunl0``: the kernel's fallback device where it exists, otherwise an
    equivalent NBMA ipip device of the same name (fb_tunnels_only_for_init_net=1)."""
    iface = Iface(host, "tunl0", (f"{addr}/32",))
    return Existing(iface) if fallback_in_new_namespaces() else Ipip(iface)


def calico_ipip(gateway_112: str, onlink_112: bool) -> Topology:
    """h110 and h112 on one underlay bridge, each with tunl0 up; h112's route back to
    h110's block goes via *gateway_112*."""
    return Topology(
        name="calico_ipip",
        hosts={"sw": {}, "h110": {}, "h112": {}},
        links=(
            Veth(Iface("h110", "eth0", (f"{H110}/24",)), Iface("sw", "p110")),
            Veth(Iface("h112", "eth0", (f"{H112}/24",)), Iface("sw", "p112")),
            Bridge(Iface("sw", "br0"), ports=("p110", "p112")),
            tunl0("h110", POD110),
            tunl0("h112", POD112),
        ),
        routes=(
            Route("h110", BLOCK112, via=H112, dev="tunl0", onlink=True),
            Route("h112", BLOCK110, via=gateway_112, dev="tunl0", onlink=onlink_112),
        ),
    )


@pytest.mark.tunnel
@pytest.mark.routing
@pytest.mark.needs("ipip")
@pytest.mark.parametrize(
    ("gateway", "onlink"),
    [
        pytest.param(H110, True, id="underlay_onlink"),
        # The report's broken route: accepted without onlink because the gateway is local.
        broken(
            POD112,
            False,
            id="overlay_gateway",
            why="an overlay gateway makes the reply's outer destination the host itself",
        ),
    ],
)
def test_c04_ipip_reply_needs_underlay_nexthop(topology, gateway: str, onlink: bool) -> None:
    net = topology(calico_ipip(gateway, onlink_112=onlink))
    with net["h112"].capture("eth0", "ip proto 4") as cap:
        replied = ping(net["h110"], POD112, count=2, wait=1)
    requests = cap.packets.where(lambda p: p[IP].src == H110)
    from_112 = cap.packets.where(lambda p: p[IP].src == H112)
    assert len(requests) == 2  # the requests always arrive encapsulated
    assert replied
    assert len(from_112) == 2
    for pkt in from_112:
        inner = pkt[IP].payload
        assert pkt[IP].dst == H110 and pkt[IP].proto == 4
        assert (inner.src, inner.dst, inner[ICMP].type) == (POD112, POD110, 0)


def _slash32_device(ns: Namespace, kind: str) -> str:
    """A /32-addressed overlay device like tunl0 or flannel.1, plus a connected underlay."""
    ns.add_veth("eth0", ns, "eth0p")
    ns.add_address("eth0", f"{H112}/24")
    ns.link("eth0").up()
    ns.link("eth0p").up()
    if kind == "tunl0":
        if "tunl0" not in ns.links():
            ns.add_ipip("tunl0")
        dev = "tunl0"
    else:
        dev = ns.add_vxlan("flannel.1", 1, dstport=8472, learning=False).name
    ns.add_address(dev, f"{POD112}/32")
    ns.link(dev).up()
    return dev


@pytest.mark.routing
@pytest.mark.parametrize(
    "gateway_prefix_on_dev",
    [
        pytest.param(False, id="slash32"),
        broken(
            True,
            id="gateway-connected",
            why="with the gateway's /24 also on the device the "
            "gateway is connected there, and the route needs no onlink",
        ),
    ],
)
@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("tunl0", marks=pytest.mark.needs("ipip")),
        pytest.param("flannel.1", marks=pytest.mark.needs("vxlan")),
    ],
)
def test_c05_gateway_outside_connected_prefixes_needs_onlink(
    ns: Namespace, record_testsuite_property, kind: str, gateway_prefix_on_dev: bool
) -> None:
    dev = _slash32_device(ns, kind)
    if gateway_prefix_on_dev:
        ns.add_address(dev, "192.168.3.200/24")
    try:
        ns.add_route(BLOCK110, via=H110, dev=dev)
    except NetlinkError as exc:
        refused = exc
    else:
        raise AssertionError(f"{dev}: gateway {H110} accepted without onlink")
    cli = ns.run(["ip", "route", "add", BLOCK110, "via", H110, "dev", dev], check=False)
    assert not cli.ok
    refusal = f"errno {refused.code} ({refused.args[1]}); iproute2: {cli.stderr.strip()}"
    record_testsuite_property(f"c05_refusal[{kind}]", refusal)
    print(f"C05 {dev}: {refusal}")
    ns.add_route(BLOCK110, via=H110, dev=dev, onlink=True)
    shown = ns.run(["ip", "route", "show", BLOCK110]).stdout
    assert f"via {H110} dev {dev}" in shown and "onlink" in shown
    # host-gw: a gateway on a connected subnet is accepted without onlink.
    ns.add_route("10.122.18.0/24", via=H110, dev="eth0")
    assert "onlink" not in ns.run(["ip", "route", "show", "10.122.18.0/24"]).stdout
