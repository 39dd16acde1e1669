# SPDX-License-Identifier: GPL-2.0-only
"""C28, C29, C34 · A VXLAN device's head-end replication, the outer TTL to a unicast remote,
and ``nolearning``.

C28 · several all-zeros FDB entries. Without multicast in the underlay (clouds, most data
centres), flannel, Docker overlay networks and EVPN fabrics replicate broadcast and unknown
traffic at the sending host: one all-zeros FDB entry per remote VTEP (``bridge fdb append
00:00:00:00:00:00 dev vxlan0 dst …``). Mechanism: ``vxlan_xmit()`` walks every remote of
the default entry and sends each a copy. Oracle: an ARP request from h1's overlay reaches
both h2 and h3 encapsulated. The broken variant appends only h2's entry (h3 gets nothing),
a strict xfail.

C29 · the outer TTL. A VXLAN device without ``ttl`` sends unicast-encapsulated packets with
the route's default hop limit (64) and uses TTL 1 only towards a multicast group; with TTL
1, every remote VTEP behind a router becomes unreachable. Mechanism: ``vxlan_xmit_one()``
picks the TTL: the configured one, else 1 for a multicast destination, else the route's
hop limit. Oracle: the encapsulated packets h2 receives carry outer TTL 64. The broken
variant creates the device with ``ttl 1``, a strict xfail.

C34 · ``nolearning``. flannel, Cilium and EVPN control planes create their VXLAN devices with
``nolearning`` and program the FDB themselves; a device that learns anyway replaces their
entries with whatever source it saw last (a spoofed or stale VTEP), as C09's report warns.
Mechanism: ``vxlan_set_mac()`` adds an entry for an unknown inner source MAC only on a
device with learning on. Oracle: after h2's overlay has talked to h1 (h1 answered its ARP),
h1's FDB holds no entry for h2's MAC. The broken variant creates h1's device with
``learning``, a strict xfail.
"""

import pytest
from scapy.layers.inet import IP, UDP

from netns import Namespace
from netns.packet_lines import Packets
from netns.topology import shapes
from netns.traffic import ping
from netns.variants import broken

pytestmark = [pytest.mark.vxlan]

VNI, PORT = 42, 4789


def vtep(host: Namespace, index: int, *extra: str) -> None:
    """vx0 (VNI 42, overlay 10.42.0.i/24) on *host*, no learning unless *extra* says
    ``learning``: its FDB is the case's."""
    learning = [] if {"learning", "nolearning"} & set(extra) else ["nolearning"]
    host.run(["ip", "link", "add", "vx0", "type", "vxlan", "id", str(VNI), "dstport",
              str(PORT), "local", f"10.0.1.{index}", *learning, *extra])  # fmt: skip
    host.run(["ip", "addr", "add", f"10.42.0.{index}/24", "dev", "vx0"])
    host.run(["ip", "link", "set", "vx0", "up"])


def flood_to(host: Namespace, remote: str) -> None:
    host.run(["bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vx0", "dst", remote])


def _encapsulated(packets: Packets) -> Packets:
    return packets.where(lambda p: UDP in p and p[UDP].dport == PORT)


@pytest.mark.parametrize(
    "remotes",
    [
        pytest.param(("10.0.1.2", "10.0.1.3"), id="two-remotes"),
        broken(("10.0.1.2",), id="one-remote", why="with one default entry only h2 is flooded"),
    ],
)
def test_c28_broadcast_reaches_every_remote_vtep(topology, remotes: tuple[str, ...]) -> None:
    net = topology(shapes.bridged(3, quiet=True))
    h1, h2, h3 = net["h1"], net["h2"], net["h3"]
    for index, host in enumerate((h1, h2, h3), 1):
        vtep(host, index)
    for remote in remotes:
        flood_to(h1, remote)
    with (
        h2.capture("eth0", f"udp port {PORT}") as at_h2,
        h3.capture("eth0", f"udp port {PORT}") as at_h3,
    ):
        h1.run(["ping", "-n", "-c", "1", "-W", "1", "10.42.0.99"], check=False)
        at_h2.wait_for(lambda p: UDP in p, timeout=2)
        at_h3.wait_for(lambda p: UDP in p, timeout=1)
    reached = {
        name: bool(_encapsulated(cap.packets)) for name, cap in (("h2", at_h2), ("h3", at_h3))
    }
    assert reached == {"h2": True, "h3": True}


@pytest.mark.parametrize(
    "ttl",
    [
        pytest.param((), id="no-ttl"),
        broken(("ttl", "1"), id="ttl1", why="an explicit ttl 1 is what the packets then carry"),
    ],
)
def test_c29_unicast_remote_gets_the_routes_ttl(topology, ttl: tuple[str, ...]) -> None:
    net = topology(shapes.bridged(2, quiet=True))
    h1, h2 = net["h1"], net["h2"]
    vtep(h1, 1, *ttl)
    vtep(h2, 2)
    flood_to(h1, "10.0.1.2")
    flood_to(h2, "10.0.1.1")
    with h2.capture("eth0", f"udp port {PORT}") as cap:
        h1.run(["ping", "-n", "-c", "1", "-W", "2", "10.42.0.2"], check=False)
        cap.wait_for(lambda p: UDP in p and p[IP].src == "10.0.1.1", timeout=2)
    ttls = {int(p[IP].ttl) for p in _encapsulated(cap.packets) if p[IP].src == "10.0.1.1"}
    assert ttls == {64}


def _fdb_has(host: Namespace, mac: str) -> bool:
    shown = host.run(["bridge", "fdb", "show", "dev", "vx0"]).stdout
    return any(line.startswith(mac) for line in shown.splitlines())


@pytest.mark.parametrize(
    "learning",
    [
        pytest.param("nolearning", id="nolearning"),
        broken("learning", id="learning", why="a learning device records h2's MAC and VTEP"),
    ],
)
def test_c34_nolearning_device_learns_nothing(topology, learning: str) -> None:
    net = topology(shapes.bridged(2, quiet=True))
    h1, h2 = net["h1"], net["h2"]
    vtep(h1, 1, learning)
    vtep(h2, 2)
    flood_to(h1, "10.0.1.2")
    flood_to(h2, "10.0.1.1")
    assert ping(h2, "10.42.0.1", count=1)  # h1 received h2's frames, and answered
    assert not _fdb_has(h1, h2.link("vx0").mac)
