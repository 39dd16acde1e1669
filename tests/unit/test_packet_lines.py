# SPDX-License-Identifier: GPL-2.0-only
"""One tcpdump-like line per packet (netns/packet_lines.py): the outer headers a tunnel case is
about come first, and a comparison names every packet on a line of its own."""

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import ARP, GRE, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw

from netns.packet_lines import Packets, explain, line

A, B = "10.0.0.1", "10.0.0.2"
ECHO = ICMP(id=7, seq=1) / Raw(b"x" * 56)


def wire(pkt: Packet) -> Packet:
    """As a capture reads it: dissected from the frame's bytes (padded to 60 like a real one)."""
    return Ether(bytes(pkt).ljust(60, b"\0"))


@pytest.mark.parametrize(
    "pkt, text",
    [
        (
            Ether() / IP(src=A, dst=B) / ECHO,
            f"IP {A} > {B}: ICMP echo request, id 7, seq 1, length 64",
        ),
        (
            Ether() / IP(src=A, dst=B) / TCP(sport=40000, dport=80, flags="A", seq=5, ack=6),
            f"IP {A}.40000 > {B}.80: Flags [.], seq 5, ack 6, win 8192, length 0",
        ),
        (
            Ether() / IP(src=A, dst=B) / TCP(sport=1, dport=2, flags="SA"),
            f"IP {A}.1 > {B}.2: Flags [S.], seq 0, ack 0, win 8192, length 0",
        ),
        (
            Ether()
            / IP(src="10.1.0.3", dst="10.1.0.4")
            / UDP(sport=40000, dport=8472)
            / VXLAN(vni=1)
            / Ether()
            / IP(src="10.244.3.2", dst="10.244.4.2")
            / ECHO,
            "IP 10.1.0.3.40000 > 10.1.0.4.8472: VXLAN, vni 1: IP 10.244.3.2 > 10.244.4.2: "
            "ICMP echo request, id 7, seq 1, length 64",
        ),
        (
            Ether() / IP(src="1.1.1.1", dst="2.2.2.2") / IP(src=A, dst=B) / ECHO,
            f"IP 1.1.1.1 > 2.2.2.2: IP {A} > {B}: ICMP echo request, id 7, seq 1, length 64",
        ),
        (
            Ether() / IP(src="1.1.1.1", dst="2.2.2.2") / GRE() / IP(src=A, dst=B) / ECHO,
            f"IP 1.1.1.1 > 2.2.2.2: GREv0: IP {A} > {B}: ICMP echo request, id 7, seq 1, length 64",
        ),
        (
            Ether() / IP(src=A, dst=B) / ICMP(type=3, code=4, nexthopmtu=1300),
            f"IP {A} > {B}: ICMP dest unreach (fragmentation needed), mtu 1300",
        ),
        (
            Ether() / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=1, dport=2) / Raw(b"abc"),
            "IP6 fd00::1.1 > fd00::2.2: UDP, length 3",
        ),
        (
            Ether() / IPv6(src="fd00::1", dst="fd00::2") / ICMPv6EchoRequest(),
            "IP6 fd00::1 > fd00::2: ICMP6, Echo Request, length 8",
        ),
        (Ether() / ARP(psrc=A, pdst=B), f"ARP, Request who-has {B} tell {A}"),
        (
            Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x88B5) / Raw(b"x" * 50),
            "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype 0x88b5, length 64",
        ),
    ],
)
def test_a_packet_is_one_line_outer_headers_first(pkt: Packet, text: str) -> None:
    assert line(wire(pkt)) == text


def test_a_comparison_lists_every_packet_and_the_other_side() -> None:
    pkts = Packets([wire(Ether() / IP(src=A, dst=B) / ECHO)])
    assert explain("==", pkts, []) == [
        "[1 packet] == []",
        "left: 1 packet",
        f"  IP {A} > {B}: ICMP echo request, id 7, seq 1, length 64",
        "right: []",
    ]
    assert explain("==", [1, 2], []) is None
    assert repr(pkts) == f"<1 packet:\n  IP {A} > {B}: ICMP echo request, id 7, seq 1, length 64\n>"
    assert repr(Packets()) == "[]"


def datagrams(count: int) -> Packets:
    return Packets(
        wire(Ether() / IP(src=A, dst=B) / UDP(sport=seq, dport=9) / Raw(b"x" * 200))
        for seq in range(1, count + 1)
    )


def test_a_long_list_shows_its_first_and_last_packets_a_line_each() -> None:
    """A burst is bounded: the first 8, how many between, the last 4; each on its line."""
    expected = [
        "<20 packets:",
        *(f"  IP {A}.{seq} > {B}.9: UDP, length 200" for seq in range(1, 9)),
        "  … 8 more",
        *(f"  IP {A}.{seq} > {B}.9: UDP, length 200" for seq in range(17, 21)),
        ">",
    ]
    assert repr(datagrams(20)).split("\n") == expected
    assert explain("==", datagrams(20), [])[2:-1] == [
        line.strip() and f"  {line.strip()}" for line in expected[1:-1]
    ]
    assert len(repr(datagrams(13)).split("\n")) == 15  # 13 fit: no "… 1 more" for one line


def test_filtered_captures_stay_lines_in_a_failing_assert(pytester: pytest.Pytester) -> None:
    """A case filters what it captured and asserts on how many: pytest's "where" names the
    filtered packets as tcpdump lines, not as scapy's repr of every field."""
    pytester.makepyfile(
        test_count=f"""
        from scapy.layers.inet import ICMP, IP
        from scapy.layers.l2 import Ether
        from scapy.packet import Raw
        from netns.packet_lines import Packets

        def test_two_requests():
            frame = Ether() / IP(src="{A}", dst="{B}") / ICMP(id=7, seq=1) / Raw(b"x" * 56)
            captured = Packets([Ether(bytes(frame))])
            requests = captured.where(lambda p: p[IP].src == "{A}")
            assert len(requests) == 2
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*where 1 = len(<1 packet:",
            f"E  * IP {A} > {B}: ICMP echo request, id 7, seq 1, length 64",
            "E  *>)",
        ]
    )
    assert "<Ether" not in result.stdout.str()


def test_a_failure_lists_packets_a_line_each_and_no_payload_bytes(
    pytester: pytest.Pytester,
) -> None:
    """pytest writes a value's repr on one line, cut to 240 characters: the failure text gets
    the list's lines back, whole, and a single packet's scapy repr loses its payload bytes
    (200 x's), not the fields the assertion is about."""
    pytester.makepyfile(
        test_burst=f"""
        from scapy.layers.inet import IP, UDP
        from scapy.layers.l2 import Ether
        from scapy.packet import Raw
        from netns.packet_lines import Packets

        def burst():
            frames = (
                Ether() / IP(src="{A}", dst="{B}") / UDP(sport=s, dport=9) / Raw(b"x" * 200)
                for s in range(1, 21)
            )
            return Packets(Ether(bytes(frame)) for frame in frames)

        def test_count():
            datagrams = burst().where(lambda p: UDP in p)
            assert len(datagrams) == 21

        def test_ttl():
            for pkt in burst():
                assert pkt[IP].ttl == 1
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*where 20 = len(<20 packets:",
            *(f"E  * IP {A}.{seq} > {B}.9: UDP, length 200" for seq in range(1, 9)),
            "E  * … 8 more",
            *(f"E  * IP {A}.{seq} > {B}.9: UDP, length 200" for seq in range(17, 21)),
            "E  *>)",
        ]
    )
    result.stdout.fnmatch_lines(["*where 64 = <IP  version=4 *"])
    assert "xxxx" not in result.stdout.str()
    result = pytester.runpytest("-p", "no:cacheprovider", "-vv", "-k", "ttl")
    result.stdout.fnmatch_lines(["*where 64 = <IP  version=4 *|<Raw  load=<200 bytes> |>>>.ttl"])
    assert "xxxx" not in result.stdout.str()
