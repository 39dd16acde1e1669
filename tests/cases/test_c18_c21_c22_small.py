# SPDX-License-Identifier: GPL-2.0-only
"""C18, C21, C22 · Three small configuration guards from the calico and flannel reports.

C18 · calico route layout (report 003, 5482–5488): a node owns a pod block as
``blackhole 10.122.157.128/26 proto bird`` plus one ``/32 dev cali…`` route per pod.
Mechanism: longest prefix wins, so allocated pods follow their /32; anything else in the
block hits the blackhole, which drops forwarded packets *silently* (no ICMP, unlike an
``unreachable`` route) and fails local sends with EINVAL (``unreachable``: EHOSTUNREACH).
Oracle: the allocated pod answers; the unallocated address does not, the client sees no
ICMP error, a local sendto fails with EINVAL. The broken variant runs it with an
``unreachable`` block route (ICMP host unreachable, EHOSTUNREACH), a strict xfail.

C21 · CNI ``"hairpinMode": true`` (003, 6969–6987): a frame that enters a bridge port and
is addressed to a MAC learned on that same port is only sent back out of it with
``bridge link set dev <port> hairpin on`` (what a pod needs to reach itself through a
service IP). Oracle: the capture on the port sees the frame twice (in, and back out) with
hairpin on; the broken variant runs it with hairpin off (seen once), a strict xfail.

C22 · flannel ``--iface`` / VXLAN ``local`` (003, 6494–6544): the outer source address of
VXLAN packets is the configured ``local`` whatever the route to the remote prefers; without
``local`` it follows the route lookup. Oracle: the outer source in an underlay capture is
the secondary address given as ``local``, on a host whose route prefers the primary; the
broken variant runs it without ``local`` (the primary leaves), a strict xfail.
"""

import errno

import pytest
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether

from netns import Namespace
from netns.topology import Iface, Route, Topology, Veth, shapes
from netns.traffic import STDLIB_PYTHON, inject_frames, ping, udp_burst
from netns.variants import broken

# --- C18 -----------------------------------------------------------------------------------
BLOCK, POD, FREE = "10.122.157.128/26", "10.122.157.129", "10.122.157.130"

_SENDTO = """
import errno, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"c18", (sys.argv[1], 9))
    print("sent")
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""


def calico_node() -> Topology:
    """client ─ node (forwarding, pod block) ─ pod, the pod wired like calico's cali*."""
    return Topology(
        name="calico_node",
        hosts={
            "client": {},
            "pod": {},
            "node": {"net.ipv4.ip_forward": 1, "net.ipv4.conf.all.proxy_arp": 1},
        },
        links=(
            Veth(
                Iface("client", "eth0", ("10.0.0.1/24",)), Iface("node", "eth0", ("10.0.0.254/24",))
            ),
            Veth(Iface("pod", "eth0", (f"{POD}/32",)), Iface("node", "cali0")),
        ),
        routes=(
            Route("client", "default", via="10.0.0.254"),
            Route("pod", "0.0.0.0/0", dev="eth0"),  # "default" needs a via in add_route
            Route("node", f"{POD}/32", dev="cali0"),
        ),
    )


@pytest.mark.routing
@pytest.mark.parametrize(
    "block_type",
    [
        "blackhole",
        broken("unreachable", id="unreachable", why="an unreachable route answers with ICMP"),
    ],
)
def test_c18_pod_block_blackhole_route(topology, block_type: str) -> None:
    net = topology(calico_node())
    client, node = net["client"], net["node"]
    node.add_route(BLOCK, type=block_type)
    assert ping(client, POD, count=1)
    with client.capture("eth0", "icmp") as cap:
        assert not ping(client, FREE, count=1, wait=1)
    icmp_errors = [(p[IP].src, p[ICMP].code) for p in cap.packets if p[ICMP].type == 3]
    local = node.run([*STDLIB_PYTHON, "-c", _SENDTO, FREE]).stdout.strip()
    assert icmp_errors == []
    assert local == errno.errorcode[errno.EINVAL]


# --- C21 -----------------------------------------------------------------------------------
STRANGER, MARKER = "02:00:00:00:21:01", "02:00:00:00:21:02"


@pytest.mark.bridge
@pytest.mark.parametrize(
    "hairpin",
    [
        "on",
        broken(
            "off",
            id="off",
            why="without hairpin a bridge never sends a frame back out of the port it came in on",
        ),
    ],
)
def test_c21_bridge_hairpin_returns_frame_to_its_port(topology, hairpin: str) -> None:
    net = topology(shapes.bridged(2))
    h1, h2, sw = net["h1"], net["h2"], net["sw"]
    sw.run(["bridge", "link", "set", "dev", "p1", "hairpin", hairpin])
    assert ping(h1, "10.0.1.2", count=1)  # the bridge has learned h1's MAC on p1
    h1_mac = h1.link("eth0").mac

    def udp(src_mac: str) -> bytes:
        return bytes(
            Ether(src=src_mac, dst=h1_mac)
            / IP(src="10.0.1.9", dst="10.0.1.1")
            / UDP(sport=2121, dport=2121)
            / b"hairpin"
        )

    with sw.capture("p1", f"ether dst {h1_mac} and udp port 2121") as cap:
        inject_frames(h1, "eth0", [udp(STRANGER)])
        # A later frame from the other port: once it is seen, the first one is done.
        inject_frames(h2, "eth0", [udp(MARKER)])
        assert cap.wait_for(lambda p: p[Ether].src == MARKER)
    seen = sum(1 for p in cap.packets if p[Ether].src == STRANGER)
    assert seen == 2


# --- C22 -----------------------------------------------------------------------------------
SECONDARY = "10.0.0.11"


@pytest.mark.vxlan
@pytest.mark.parametrize(
    "local",
    [
        pytest.param(SECONDARY, id="local_secondary"),
        broken(None, id="no_local", why="without local the route's preferred source leaves"),
    ],
)
def test_c22_vxlan_local_selects_outer_source(veth_pair, local: str | None) -> None:
    a: Namespace = veth_pair["a"]
    a.add_address("eth0", f"{SECONDARY}/24")
    a.add_vxlan("vx0", 42, local=local, remote="10.0.0.2", dev="eth0")
    a.add_address("vx0", "192.168.42.1/24")
    a.link("vx0").up()
    with a.capture("eth0", "udp port 4789") as cap:
        udp_burst(a, "192.168.42.2", count=1)  # nobody answers; its ARP request is enough
        outer = cap.wait_for(lambda p: UDP in p and p[UDP].dport == 4789)
    assert outer, "no VXLAN packet left the underlay"
    # Without `local` the route lookup picks the primary address 10.0.0.1.
    assert {p[IP].src for p in outer} == {SECONDARY}
