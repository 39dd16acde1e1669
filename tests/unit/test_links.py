# SPDX-License-Identifier: GPL-2.0-only
"""Every link type the kernel supports carries real traffic, seen by captures and counters.

Types this kernel lacks skip with the probe's reason (and run in the VM kernels).
"""

import sys
import textwrap

import pytest
from scapy.layers.inet import ICMP, IP, UDP

from netns import Namespace
from netns.topology import Network, shapes


def _ping(ns: Namespace, dst: str, count: int = 3) -> None:
    ns.run(["ping", "-c", str(count), "-i", "0.05", "-W", "2", dst])


def test_veth_ping_counted_by_capture_and_link_stats(veth_pair: Network) -> None:
    a, b = veth_pair["a"], veth_pair["b"]
    before = b.link("eth0").stats()["rx_packets"]
    with b.capture("eth0", "icmp") as cap:
        _ping(a, "10.0.0.2", count=3)
    requests = [p for p in cap.packets if p[ICMP].type == 8]
    replies = [p for p in cap.packets if p[ICMP].type == 0]
    assert len(requests) == 3 and len(replies) == 3
    assert b.link("eth0").stats()["rx_packets"] - before >= 3


def test_veth_ipv6(veth_pair: Network) -> None:
    veth_pair["a"].run(["ping", "-6", "-c", "1", "-W", "2", "fd00::2"])


def test_bridge_forwards_between_ports(topology) -> None:
    net = topology(shapes.bridged(3))
    with net["sw"].capture("p3", "icmp") as to_h3, net["sw"].capture("p2", "icmp") as to_h2:
        _ping(net["h1"], "10.0.1.3", count=2)
    assert sum(1 for p in to_h3.packets if p[ICMP].type == 8) == 2
    # The bridge learned h3's MAC from the ARP reply: unicast is not flooded to h2.
    assert to_h2.packets == []


def test_vxlan_encapsulates_on_its_udp_port(topology) -> None:
    net = topology(shapes.flannel_vxlan())
    with net["sw"].capture("u3", "udp port 8472") as cap:
        _ping(net["pod3"], shapes.pod_ip(4), count=2)
    outer = [p for p in cap.packets if UDP in p and p[UDP].dport == 8472]
    assert len(outer) >= 4  # 2 requests out, 2 replies back
    assert {p[IP].src for p in outer} == {shapes.underlay_ip(3), shapes.underlay_ip(4)}


# The echo request is sent again until a reply comes (up to 10 s): the tun device gets its
# carrier when this program attaches, and until the kernel's link watcher has processed that
# (deferred work, late on a loaded machine) the device transmits through the no-op qdisc and
# the kernel's reply is dropped. The oracle is unchanged: a reply to our request, or failure.
TUN_ECHO = textwrap.dedent("""
    import fcntl, os, struct, select, time
    from scapy.layers.inet import IP, ICMP
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", b"tun0", 0x0001 | 0x1000))
    deadline = time.monotonic() + 10
    seq = 0
    while time.monotonic() < deadline:
        seq += 1
        request = IP(src="10.1.0.2", dst="10.1.0.1") / ICMP(id=7, seq=seq) / b"netregress"
        os.write(fd, bytes(request))
        while select.select([fd], [], [], 0.5)[0]:
            pkt = IP(os.read(fd, 2048))
            if ICMP in pkt and pkt[ICMP].type == 0 and pkt[ICMP].id == 7:
                print("reply", pkt[IP].src, pkt[IP].dst, bytes(pkt[ICMP].payload).decode())
                raise SystemExit(0)
""")


def test_tun_device_answers_injected_ping(ns: Namespace) -> None:
    ns.add_tun("tun0")
    ns.add_address("tun0", "10.1.0.1/24")
    ns.link("tun0").up()
    out = ns.run([sys.executable, "-c", TUN_ECHO]).stdout
    assert out.strip() == "reply 10.1.0.1 10.1.0.2 netregress"


@pytest.mark.needs("dummy")
def test_dummy_swallows_routed_traffic(ns: Namespace) -> None:
    ns.add_dummy("dummy0").up()
    ns.add_address("dummy0", "10.2.0.1/24")
    with ns.capture("dummy0", "udp") as cap:
        ns.run(["bash", "-c", "echo x > /dev/udp/10.2.0.9/9"])
        cap.wait_for(lambda p: UDP in p)
    assert len([p for p in cap.packets if UDP in p]) == 1
    assert ns.link("dummy0").stats()["tx_packets"] >= 1


@pytest.mark.needs("gre")
def test_gre_tunnel_carries_ping(veth_pair: Network) -> None:
    a, b = veth_pair["a"], veth_pair["b"]
    a.add_gre("gre1", local="10.0.0.1", remote="10.0.0.2").add_address("10.3.0.1/30").up()
    b.add_gre("gre1", local="10.0.0.2", remote="10.0.0.1").add_address("10.3.0.2/30").up()
    with b.capture("eth0", "ip proto 47") as cap:
        _ping(a, "10.3.0.2", count=2)
    assert len(cap.packets) >= 4
    assert b.link("gre1").stats()["rx_packets"] >= 2


@pytest.mark.needs("ipip")
def test_ipip_tunnel_carries_ping(veth_pair: Network) -> None:
    a, b = veth_pair["a"], veth_pair["b"]
    a.add_ipip("ipip1", local="10.0.0.1", remote="10.0.0.2").add_address("10.4.0.1/30").up()
    b.add_ipip("ipip1", local="10.0.0.2", remote="10.0.0.1").add_address("10.4.0.2/30").up()
    with b.capture("eth0", "ip proto 4") as cap:
        _ping(a, "10.4.0.2", count=2)
    assert len(cap.packets) >= 4
    assert b.link("ipip1").stats()["rx_packets"] >= 2


def test_mtu_and_offload_knobs(veth_pair: Network) -> None:
    link = veth_pair["a"].link("eth0")
    link.set_mtu(1400)
    assert link.mtu == 1400
    link.offload(tx=False)
    features = veth_pair["a"].run(["ethtool", "-k", "eth0"]).stdout
    assert "tx-checksumming: off" in features
