# SPDX-License-Identifier: GPL-2.0-only
"""C31, C32, C33, C35, C36 · IP tunnels: the inherited TTL, a packet exactly the tunnel's MTU,
GRE keys, the fallback devices.

C31 · ``ttl inherit``. An IPIP tunnel without a fixed TTL copies the inner packet's TTL to
the outer header, so traceroute through the tunnel still works and a routing loop still
ends. Mechanism: ``ip_tunnel_xmit()`` uses the inner IPv4 TTL when the tunnel's ttl is 0.
Oracle: a ping sent with TTL 5 leaves encapsulated with outer TTL 5. The broken variant
fixes the tunnel's ttl at 64, a strict xfail.

C32 · a DF packet exactly the tunnel's MTU. Calico and flannel set pod MTUs to the tunnel's
MTU so that full-sized packets fit; an off-by-one in the tunnel's path-MTU check rejects
exactly those, and every full-sized DF packet (all TCP) bounces with "fragmentation
needed". Mechanism: ``tnl_update_pmtu()`` refuses a DF packet only when it is larger than
the MTU. Oracle: a DF ping of exactly 1480 bytes (the tunnel's MTU) through IPIP is
answered. The broken variant sends one byte more, a strict xfail.

C33 · GRE with different input and output keys. Tunnels keyed per direction (``ikey``/
``okey``: distinct keys per peer, as some VPN concentrators and SD-WAN overlays configure
them) work only if each side sends its ``okey`` and accepts its ``ikey``. Mechanism:
``__gre_xmit()`` puts the tunnel's o_key in the GRE header; the receiver matches on its
i_key. Oracle: ping across a GRE tunnel keyed ikey 1/okey 2 on one side and ikey 2/okey 1
on the other. The broken variant gives both sides ikey 1/okey 2 (neither accepts what the
other sends), a strict xfail.
"""

import pytest
from scapy.layers.inet import IP
from scapy.packet import Packet

from netns import Namespace
from netns.topology import shapes
from netns.traffic import ping
from netns.variants import broken

pytestmark = [pytest.mark.tunnel]

A, B = "10.0.0.1", "10.0.0.2"
A_INNER, B_INNER = "10.9.0.1", "10.9.0.2"


def tunnel(host: Namespace, kind: str, local: str, remote: str, inner: str, *extra: str) -> None:
    """``t0``: a point-to-point IPIP or GRE tunnel from *local* to *remote*, /30 inside."""
    host.run(["ip", "link", "add", "t0", "type", kind, "local", local, "remote", remote, *extra])
    host.run(["ip", "addr", "add", f"{inner}/30", "dev", "t0"])
    host.run(["ip", "link", "set", "t0", "up"])


def _outer_ttls(packets: list[Packet]) -> set[int]:
    return {int(p[IP].ttl) for p in packets if IP in p and p[IP].proto == 4 and p[IP].src == A}


@pytest.mark.needs("ipip")
@pytest.mark.parametrize(
    "ttl",
    ["inherit", broken("64", id="ttl64", why="a fixed tunnel ttl is what the outer header gets")],
)
def test_c31_ipip_ttl_inherit_copies_the_inner_ttl(topology, ttl: str) -> None:
    net = topology(shapes.pair())
    a, b = net["a"], net["b"]
    tunnel(a, "ipip", A, B, A_INNER, "ttl", ttl)
    tunnel(b, "ipip", B, A, B_INNER)
    with b.capture("eth0", "ip proto 4") as cap:
        a.run(["ping", "-n", "-c", "1", "-t", "5", "-W", "2", B_INNER], check=False)
        cap.wait_for(lambda p: IP in p and p[IP].src == A, timeout=2)
    assert _outer_ttls(cap.packets) == {5}


@pytest.mark.needs("ipip")
@pytest.mark.parametrize(
    "payload",
    [1452, broken(1453, id="one-byte-more", why="1481 bytes exceed the 1480-byte tunnel MTU")],
)
def test_c32_ipip_carries_a_df_packet_of_exactly_its_mtu(topology, payload: int) -> None:
    net = topology(shapes.pair())
    a, b = net["a"], net["b"]
    tunnel(a, "ipip", A, B, A_INNER)
    tunnel(b, "ipip", B, A, B_INNER)
    mtu = int(a.run(["cat", "/sys/class/net/t0/mtu"]).stdout)
    assert mtu == 1480, f"precondition: the tunnel's MTU is {mtu}"
    answered = a.run(
        ["ping", "-n", "-M", "do", "-s", str(payload), "-c", "1", "-W", "2", B_INNER], check=False
    )
    assert answered.ok, answered.stdout + answered.stderr


@pytest.mark.needs("gre")
@pytest.mark.parametrize(
    "b_keys",
    [
        pytest.param(("ikey", "2", "okey", "1"), id="mirrored"),
        broken(("ikey", "1", "okey", "2"), id="same", why="each side then rejects the other's key"),
    ],
)
def test_c33_gre_sends_its_okey_and_accepts_its_ikey(topology, b_keys: tuple[str, ...]) -> None:
    net = topology(shapes.pair())
    a, b = net["a"], net["b"]
    tunnel(a, "gre", A, B, A_INNER, "ikey", "1", "okey", "2")
    tunnel(b, "gre", B, A, B_INNER, *b_keys)
    assert ping(a, B_INNER, count=1, wait=2)


@pytest.mark.needs("ipip")
@pytest.mark.parametrize(
    "tunl0",
    ["up", broken("down", id="tunl0-down", why="a fallback device that is down takes nothing")],
)
def test_c35_unmatched_ipip_reaches_the_fallback_device(topology, tunl0: str) -> None:
    """C35 · the fallback device ``tunl0`` (calico's receive side). A node takes IPIP from
    every peer through ``tunl0`` without configuring a tunnel per peer: a packet that matches
    no configured tunnel goes to the namespace's fallback device while it is up (in
    ``ip_tunnel_lookup()`` ``tunl0`` is the keyless any-to-any tunnel of the hash table, found
    by the scan for wildcard tunnels; see C36 for the last resort). Oracle: a's ping through
    its point-to-point tunnel to b, which has only ``tunl0`` (up, with an address and an
    onlink route back), is answered. The broken variant leaves ``tunl0`` down, a strict xfail."""
    net = topology(shapes.pair())
    a, b = net["a"], net["b"]
    tunnel(a, "ipip", A, B, A_INNER)
    b.run(["ip", "addr", "add", f"{B_INNER}/32", "dev", "tunl0"])
    b.run(["ip", "link", "set", "tunl0", tunl0])
    b.run(["ip", "route", "add", f"{A_INNER}/32", "via", A, "dev", "tunl0", "onlink"], check=False)
    assert ping(a, B_INNER, count=1, wait=2)


@pytest.mark.needs("gre")
@pytest.mark.parametrize(
    "gre0",
    ["up", broken("down", id="gre0-down", why="a fallback device that is down takes nothing")],
)
def test_c36_keyed_gre_no_tunnel_matches_reaches_gre0(topology, gre0: str) -> None:
    """C36 · a keyed GRE packet that no tunnel matches reaches ``gre0``. A collector (or a
    hub terminating GRE from many routers) listens on the fallback device ``gre0`` instead of
    configuring one tunnel per peer and key: the kernel hands it every GRE packet no
    configured tunnel takes while it is up. For keyless packets ``gre0`` is found in the
    tunnel hash table like any wildcard tunnel (C35's path); a packet carrying a key misses
    every bucket ``gre0`` can be in, and reaches it only through ``ip_tunnel_lookup()``'s last
    resort (``itn->fb_tunnel_dev`` if up), so a regression there loses exactly the keyed
    traffic, which ``gre_rcv()`` then rejects with ICMP port unreachable. Oracle: a's ping
    through its GRE tunnel with output key 7 to b, which has only ``gre0`` (up, with the
    inner address), is decapsulated there: ``gre0``'s receive counter counts it. The broken
    variant leaves ``gre0`` down, a strict xfail."""
    net = topology(shapes.pair())
    a, b = net["a"], net["b"]
    tunnel(a, "gre", A, B, A_INNER, "okey", "7")
    b.run(["ip", "addr", "add", f"{B_INNER}/32", "dev", "gre0"])
    b.run(["ip", "link", "set", "gre0", gre0])
    received = "/sys/class/net/gre0/statistics/rx_packets"
    before = int(b.run(["cat", received]).stdout)
    a.run(["ping", "-n", "-c", "1", "-W", "1", B_INNER], check=False)
    assert int(b.run(["cat", received]).stdout) - before == 1, "gre0 received no GRE packet"
