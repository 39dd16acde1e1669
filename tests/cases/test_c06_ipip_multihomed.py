# SPDX-License-Identifier: GPL-2.0-only
"""C06 — IPIP on a multi-homed host: the outer source the routing picks is not the one
the peer's tunnel knows, and the overlay goes silent.

Field story (field-cases C06; report 003 lines 5398–5514, calico "case 2"): node2 has one
address, 192.168.0.111; node4 has 192.168.0.113 and 192.168.3.113 and is registered as
192.168.3.113. Pings from node4's pods reached node2 but "node2 did not hand them to
tunl0": node4's IPIP packets left with outer source 192.168.0.113, chosen by its route to
192.168.0.111, and "only 3.113 is recognised". The fix moved node4's connected route and
default route to the 192.168.3.0/24 side so the outer source became 192.168.3.113.

Mechanism: an IPIP tunnel with ``remote X`` only accepts packets whose outer source is X.
Without a matching tunnel the packet goes to the fallback ``tunl0`` if that is UP, else it
is dropped and the kernel answers ICMP destination-unreachable. The outer source of an
unbound (``local any``) tunnel is the route's preferred source toward the remote. With
strict ``rp_filter``, a reply arriving on the "other" interface is dropped as a martian.

Oracles (all asserted): the wrong outer source on the wire, node2's tunnel rx counter
unchanged, node2's ICMP unreachable counter moving, the ping failing — then, after the
report's fix, the registered source on the wire and the ping working. Variants: tunl0 UP
catches the mismatched packets; strict rp_filter drops the asymmetric reply
(IPReversePathFilter); a scapy probe of hand-built IPIP packets with the right and the
wrong outer source. Each oracle has a broken variant (the fix for the failure's oracle, no
fix for the fix's; strict rp_filter; tunl0 down) that runs it as a strict xfail.

Needs ipip: skipped on kernels without it, run for real in the VM kernels (kernels/).
"""

from collections.abc import Callable
from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP

from netns import Namespace
from netns.counters import grown, moved, snapshot
from netns.topology import Network, shapes
from netns.traffic import STDLIB_PYTHON, ping, poll_until
from netns.variants import broken

pytestmark = [pytest.mark.needs("ipip"), pytest.mark.tunnel, pytest.mark.routing]

N2_OVERLAY, N4_OVERLAY = shapes.N2_OVERLAY, shapes.N4_OVERLAY
PINGS = 3


def outer_ipip(packets: list) -> list[tuple[str, str]]:
    """(outer src, outer dst) of every IPIP packet (IP protocol 4) in a capture."""
    return [(p[IP].src, p[IP].dst) for p in packets if IP in p and p[IP].proto == 4]


def route_source(ns: Namespace, dst: str) -> str:
    """The source address the kernel picks toward *dst* (``ip route get``)."""
    words = ns.run(["ip", "-4", "route", "get", dst]).stdout.split()
    return words[words.index("src") + 1]


def apply_report_fix(net: Network) -> None:
    """The report's fix on node4: no connected route on the 0.x side, default via 3.253."""
    n4 = net["n4"]
    n4.run(["ip", "route", "del", "192.168.0.0/24", "dev", "eth0"])
    n4.run(["ip", "route", "replace", "default", "via", shapes.ROUTER3, "dev", "eth1"])


def overlay_ping(net: Network, hopeless: Callable[[], bool] | None = None) -> bool:
    return ping(net["n4"], N2_OVERLAY, count=PINGS, wait=2, hopeless=hopeless)


def all_dropped(ns: Namespace, counter: str) -> Callable[[], bool]:
    """The ping's failure is certain once *counter* of *ns* counted a drop per request (the
    ping in these tests is the only traffic there is): no reply can come any more."""
    return grown(ns, counter, PINGS)


@pytest.fixture
def net(topology) -> Network:
    return topology(shapes.ipip_multihomed())


def fix_variants(oracle_wants_fix: bool, why: str) -> list:
    """The report's fix applied or not: one is the oracle's configuration, the other its
    broken variant."""
    ids = {True: "report-fix", False: "as-reported"}
    return [
        pytest.param(oracle_wants_fix, id=ids[oracle_wants_fix]),
        broken(not oracle_wants_fix, id=ids[not oracle_wants_fix], why=why),
    ]


@pytest.mark.parametrize("fixed", fix_variants(False, "after the fix the registered source leaves"))
def test_c06_wrong_outer_source_is_dropped(net: Network, fixed: bool) -> None:
    """The field failure: outer src 192.168.0.113 reaches node2 and dies there."""
    if fixed:
        apply_report_fix(net)
    assert route_source(net["n4"], shapes.N2_UNDERLAY) == shapes.N4_PRIMARY
    n2_tunnel = net["n2"].link("ipip0")
    rx_before = n2_tunnel.stats()["rx_packets"]
    # Each request node2 refuses with ICMP unreachable reached no tunnel: it gets no reply.
    refused = all_dropped(net["n2"], "IcmpOutDestUnreachs")
    with net["sw"].capture("n2", "ip proto 4 or icmp") as seg0, net["n2"].nstat() as n2:
        assert not overlay_ping(net, refused), "overlay ping must fail with the wrong outer source"
    assert set(outer_ipip(seg0.packets)) == {(shapes.N4_PRIMARY, shapes.N2_UNDERLAY)}
    assert len(outer_ipip(seg0.packets)) == PINGS
    assert n2_tunnel.stats()["rx_packets"] == rx_before, "node2's tunnel must not accept"
    assert n2["IcmpOutDestUnreachs"] >= 1, n2.nonzero()


@pytest.mark.parametrize(
    "fixed", fix_variants(True, "without the fix the outer source is 192.168.0.113")
)
def test_c06_report_fix_restores_the_overlay(net: Network, fixed: bool) -> None:
    """After the fix the outer source is the registered 192.168.3.113 and pings work."""
    if fixed:
        apply_report_fix(net)
    assert route_source(net["n4"], shapes.N2_UNDERLAY) == shapes.N4_REGISTERED
    rx_before = net["n2"].link("ipip0").stats()["rx_packets"]
    with net["sw"].capture("n4b", "ip proto 4") as seg3:
        assert overlay_ping(net), "overlay ping must work after the report's fix"
    pairs = outer_ipip(seg3.packets)
    requests = [p for p in pairs if p[0] == shapes.N4_REGISTERED]
    replies = [p for p in pairs if p[1] == shapes.N4_REGISTERED]
    assert len(requests) == PINGS and len(replies) == PINGS
    # As in the report's "normal" state: the request's outer dst is the reply's outer src.
    assert {dst for _, dst in requests} == {src for src, _ in replies} == {shapes.N2_UNDERLAY}
    assert net["n2"].link("ipip0").stats()["rx_packets"] - rx_before == PINGS


def _fallback_tunl0_or_skip(net: Network) -> None:
    if "tunl0" not in net["n2"].links():
        mode = Path("/proc/sys/net/core/fb_tunnels_only_for_init_net").read_text().strip()
        pytest.skip(
            f"no fallback tunl0 in new namespaces (net.core.fb_tunnels_only_for_init_net={mode})"
        )
    net["n2"].link("tunl0").up()


@pytest.mark.parametrize(
    "rp_filter",
    [
        pytest.param(0, id="rp_filter0"),
        pytest.param(2, id="rp_filter2-loose"),
        broken(1, id="rp_filter1-strict", why="strict rp_filter drops the asymmetric reply"),
    ],
)
def test_c06_tunl0_catches_mismatch_and_rp_filter_judges_reply(
    net: Network, rp_filter: int
) -> None:
    """tunl0 UP on node2 takes the mismatched packets; node2 replies toward the registered
    3.113, so node4 receives 0.111's packets on eth1 while its route to 0.111 is eth0:
    strict rp_filter drops that reply, loose or off accepts it."""
    _fallback_tunl0_or_skip(net)
    net["n4"].set_sysctls(
        {"net.ipv4.conf.all.rp_filter": rp_filter, "net.ipv4.conf.eth1.rp_filter": rp_filter}
    )
    # Node2 reaches node4's overlay through its registered address (calico's route).
    net["n2"].run(
        [
            "ip",
            "route",
            "replace",
            f"{N4_OVERLAY}/32",
            "via",
            shapes.N4_REGISTERED,
            "dev",
            "tunl0",
            "onlink",
        ]
    )
    tunl0_before = net["n2"].link("tunl0").stats()["rx_packets"]
    # A reply node4's rp_filter dropped is lost: once every reply is, the ping has failed.
    filtered = all_dropped(net["n4"], "TcpExtIPReversePathFilter")
    with net["n4"].nstat() as n4:
        replied = overlay_ping(net, hopeless=filtered)
    assert net["n2"].link("tunl0").stats()["rx_packets"] - tunl0_before == PINGS
    assert replied, n4.nonzero()
    assert n4["TcpExtIPReversePathFilter"] == 0


# Sends whole IP packets as given (IPPROTO_RAW implies IP_HDRINCL): the kernel routes them
# by destination but keeps our outer source. Only the standard library runs in the
# namespace; the packets are built with scapy here, where it is already imported (importing
# it again in the child costs seconds in a TCG guest).
SEND_IP = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for packet in sys.argv[2:]:
    s.sendto(bytes.fromhex(packet), (sys.argv[1], 0))
"""


def ipip_probe(outer_src: str, ident: int) -> str:
    """IPIP from node4's overlay to node2's with the given outer source, as hex."""
    inner = IP(src=N4_OVERLAY, dst=N2_OVERLAY) / ICMP(id=ident, seq=1)
    return bytes(IP(src=outer_src, dst=shapes.N2_UNDERLAY) / inner).hex()


@pytest.mark.parametrize(
    "tunl0_up",
    [
        pytest.param(True, id="tunl0-up"),
        broken(
            False,
            id="tunl0-down",
            why="unmatched IPIP reaches the stack only through an UP tunl0; down, it is dropped",
        ),
    ],
)
def test_c06_scapy_probe_right_and_wrong_outer_source(net: Network, tunl0_up: bool) -> None:
    """Hand-built IPIP from node4 with outer src 3.113 (registered) and 0.113 (not):
    node2's p2p tunnel delivers only the first; the second reaches the stack through
    tunl0 (counted in its rx_packets, readable whether tunl0 is up or down)."""
    _fallback_tunl0_or_skip(net)
    if not tunl0_up:
        net["n2"].link("tunl0").down()
    tunl0 = net["n2"].link("tunl0")
    tunl0_before = tunl0.stats()["rx_packets"]
    icmp_before = snapshot(net["n2"])

    def caught() -> int:
        return tunl0.stats()["rx_packets"] - tunl0_before

    def refused() -> bool:
        """node2 answered the wrong source with ICMP unreachable: tunl0 will not count it."""
        return moved(net["n2"], "IcmpOutDestUnreachs", icmp_before) > 0

    with net["n2"].capture("ipip0", "icmp") as cap:
        probes = [ipip_probe(shapes.N4_REGISTERED, 0x1111), ipip_probe(shapes.N4_PRIMARY, 0x2222)]
        net["n4"].run([*STDLIB_PYTHON, "-c", SEND_IP, shapes.N2_UNDERLAY, *probes])
        cap.wait_for(lambda p: ICMP in p and p[ICMP].type == 8, count=1)
    assert {p[ICMP].id for p in cap.packets if ICMP in p and p[ICMP].type == 8} == {0x1111}
    poll_until(lambda: caught() >= 1 or refused(), timeout=5)
    assert caught() == 1, f"tunl0 rx_packets +{caught()}, expected +1"
