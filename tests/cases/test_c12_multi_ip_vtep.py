# SPDX-License-Identifier: GPL-2.0-only
"""C12 · Multi-IP host: the peer's VXLAN replies go to the wrong address of the VTEP host.

Field story (report 003, lines 6407–6551): a node with 1.1.1.198/25 (default route) and
192.168.0.1/24 (flannel underlay). "Ping works, curl does not reach the port." The capture
shows the SYN leaving with outer source 192.168.0.1 while the SYN-ACK comes back to outer
destination 1.1.1.198 (the address flannel had published for the node), and the SYN is
retransmitted about 1 s later. The report's explanation ("MAC and IP do not match, so the
kernel drops it; ICMP is not dropped, reason unknown") is not established; the fix was
``--iface`` so the VTEP uses the underlay address.

Mechanism under investigation (catalog: a parametrized measurement, not the report's
explanation): Linux is a weak host, so a datagram to any local address is accepted on any
interface, and VXLAN receive does not check the outer destination against ``local``. What
can drop the misaddressed replies is policy: reverse-path filtering. Two paths are
measured for each ``rp_filter`` value (0 off, 1 strict, 2 loose) on the VTEP host:

- ``arp``: the peer reaches 1.1.1.198 on the shared underlay segment (ARP for any local
  address is answered on any interface, ``arp_ignore=0``) — the report's capture, where the
  frame carries 192.168.0.1's MAC. The outer source 192.168.0.3 arrives on the interface
  the host would use to reach it, so no rp_filter mode objects.
- ``routed``: the peer reaches 1.1.1.198 through a router onto the public interface. The
  outer source's best reverse route is the underlay interface: strict mode drops it.

Oracle (asserted): ping and the TCP handshake across the overlay succeed and
TcpExtIPReversePathFilter stays 0. Measured identical on 5.10.223, 6.1.176, 6.12.107, 7.2.13
(Debian cloud kernels, matrix VMs) and 6.18.44 (host): only strict mode on the routed path
drops the replies (TcpExtIPReversePathFilter and TcpExtTCPSynRetrans grow) — that is the
broken variant, a strict xfail. A kernel that answers differently in another combination
fails the test: the regression signal, or an entry for ``kernels/expectations.toml`` after
review. Each test records what it measured (``record_testsuite_property``) so the matrix
report shows the per-kernel table.
"""

import platform

import pytest

from netns.counters import grown
from netns.topology import Bridge, Fdb, Iface, Neigh, Route, Topology, Veth, Vxlan
from netns.traffic import TcpEchoServer, ping, tcp_echo
from netns.variants import broken

pytestmark = [pytest.mark.vxlan, pytest.mark.routing]

PUBLIC, UNDERLAY, PEER, ROUTER_PUB, ROUTER_UND = (
    "1.1.1.198",
    "192.168.0.1",
    "192.168.0.3",
    "1.1.1.129",
    "192.168.0.254",
)
OVERLAY_A, OVERLAY_B = "172.19.0.0", "172.19.2.0"
MAC_A, MAC_B = "02:00:00:0c:00:01", "02:00:00:0c:02:01"

# (host, interface, address, switch port): "pub" is 1.1.1.128/25, "und" 192.168.0.0/24.
_UPLINKS = (
    ("a", "eth0", f"{PUBLIC}/25", "a0"),
    ("a", "eth1", f"{UNDERLAY}/24", "a1"),
    ("b", "eth0", f"{PEER}/24", "b0"),
    ("r", "eth0", f"{ROUTER_PUB}/25", "r0"),
    ("r", "eth1", f"{ROUTER_UND}/24", "r1"),
)


def multi_ip_vtep(path: str, rp_filter: int) -> Topology:
    """VTEP host ``a`` (public 1.1.1.198/25 + underlay 192.168.0.1/24), peer ``b`` on the
    underlay whose FDB entry for a's VTEP points at the *public* address."""
    rp = {"net.ipv4.conf.all.rp_filter": rp_filter, "net.ipv4.conf.default.rp_filter": rp_filter}
    to_public = (
        Route("b", f"{PUBLIC}/32", dev="eth0")
        if path == "arp"
        else Route("b", "1.1.1.128/25", via=ROUTER_UND)
    )
    return Topology(
        name=f"c12_{path}_rp{rp_filter}",
        hosts={"sw": {}, "r": {"net.ipv4.ip_forward": 1}, "a": rp, "b": {}},
        links=(
            *(
                Veth(Iface(host, ifname, (cidr,)), Iface("sw", port))
                for host, ifname, cidr, port in _UPLINKS
            ),
            Bridge(Iface("sw", "pub"), ports=("a0", "r0")),
            Bridge(Iface("sw", "und"), ports=("a1", "b0", "r1")),
            Vxlan(
                Iface("a", "flannel.1", (f"{OVERLAY_A}/32",), mac=MAC_A),
                vni=1,
                local=UNDERLAY,
                dstport=8472,
                learning=False,
                dev="eth1",
            ),
            Vxlan(
                Iface("b", "flannel.1", (f"{OVERLAY_B}/32",), mac=MAC_B),
                vni=1,
                local=PEER,
                dstport=8472,
                learning=False,
                dev="eth0",
            ),
        ),
        routes=(
            Route("a", "default", via=ROUTER_PUB),
            Route("a", "172.19.2.0/24", via=OVERLAY_B, dev="flannel.1", onlink=True),
            Route("b", "172.19.0.0/24", via=OVERLAY_A, dev="flannel.1", onlink=True),
            to_public,
        ),
        neighbours=(
            Neigh("a", "flannel.1", OVERLAY_B, MAC_B),
            Neigh("b", "flannel.1", OVERLAY_A, MAC_A),
        ),
        fdb=(Fdb("a", "flannel.1", MAC_B, PEER), Fdb("b", "flannel.1", MAC_A, PUBLIC)),
    )


@pytest.mark.parametrize(
    ("path", "rp_filter"),
    [
        ("arp", 0),
        ("arp", 1),
        ("arp", 2),
        ("routed", 0),
        ("routed", 2),
        broken(
            "routed",
            1,
            id="routed-1",
            why="strict rp_filter drops replies whose outer "
            "source is best reached through the other interface",
        ),
    ],
)
def test_c12_multi_ip_vtep(topology, record_testsuite_property, path: str, rp_filter: int) -> None:
    net = topology(multi_ip_vtep(path, rp_filter))
    a, b = net["a"], net["b"]
    # A reply a's rp_filter dropped is lost for good: the ping has failed (and rp_drops, too).
    filtered = grown(a, "TcpExtIPReversePathFilter", 1)
    with TcpEchoServer(b, OVERLAY_B, 80), a.nstat() as delta:
        pinged = ping(a, OVERLAY_B, count=1, wait=1, hopeless=filtered)
        handshake = pinged and tcp_echo(a, OVERLAY_B, 80).ok
    measured = {
        "ping": pinged,
        "tcp": handshake,
        "rp_drops": delta["TcpExtIPReversePathFilter"],
        "syn_retrans": delta["TcpExtTCPSynRetrans"],
    }
    line = f"kernel {platform.release()} path={path} rp_filter={rp_filter}: {measured}"
    record_testsuite_property(f"c12[{path}-{rp_filter}]", line)
    print(f"C12 {line}")
    assert (pinged, handshake) == (True, True), measured
    assert measured["rp_drops"] == 0, measured
