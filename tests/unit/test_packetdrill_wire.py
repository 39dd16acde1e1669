# SPDX-License-Identifier: GPL-2.0-only
"""Packet encoding/decoding and the short dump format, cross-checked with scapy."""

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6

from packetdrill.config import Config, finalize
from packetdrill.conn import Conn, build, map_inbound
from packetdrill.dump import dump
from packetdrill.loader import load_script
from packetdrill.model import PacketEvent
from packetdrill.wire import decode, encode


def packet_line(line: str, version: str = "ipv4") -> tuple[PacketEvent, Config]:
    script, cfg = load_script("t.pkt", [("ip_version", version)], f"0 {line}\n")
    action = script.events[0].action
    assert isinstance(action, PacketEvent)
    return action, cfg


def test_inbound_tcp_is_mapped_and_checksummed() -> None:
    action, cfg = packet_line("< P. 1:1001(1000) ack 1 win 257 <nop,nop,TS val 5 ecr 9>")
    conn = Conn(6, local_port=8080, remote_port=40000, remote_isn=100, live_local_isn=7000)
    conn.ts_map[9] = 123456
    packet = build(action, cfg, conn, inbound=True)
    map_inbound(packet, conn, cfg)
    raw = encode(packet)
    scapy_packet = IP(raw)
    tcp = scapy_packet[TCP]
    assert (tcp.sport, tcp.dport, tcp.seq, tcp.ack, tcp.window) == (40000, 8080, 101, 7001, 257)
    assert dict((k, v) for k, v in tcp.options if k == "Timestamp")["Timestamp"] == (5, 123456)
    assert len(tcp.payload) == 1000 and bytes(tcp.payload) == bytes(1000)
    rebuilt = IP(bytes(IP(raw)))
    del rebuilt.chksum, rebuilt[TCP].chksum
    assert bytes(IP(bytes(rebuilt))) == raw  # scapy computes the same checksums


def test_udp_and_icmpv6_checksums_match_scapy() -> None:
    action, cfg = packet_line("< udp 5000>9 (10)", "ipv6")
    raw = encode(build(action, cfg, Conn(17, 8080, 1), inbound=True))
    parsed = IPv6(raw)
    assert (parsed[UDP].sport, parsed[UDP].dport, parsed[UDP].len) == (5000, 9, 18)
    original = parsed[UDP].chksum
    del parsed[UDP].chksum
    assert IPv6(bytes(parsed))[UDP].chksum == original
    action, cfg = packet_line("< icmp unreachable frag_needed mtu 1200 [1:1461(1460)]")
    raw = encode(build(action, cfg, Conn(6, 8080, 40000), inbound=True))
    icmp = IP(raw)[ICMP]
    assert (icmp.type, icmp.code, icmp.nexthopmtu) == (3, 4, 1200)
    original = icmp.chksum
    del icmp.chksum
    assert IP(bytes(IP(raw)))[ICMP].chksum == original


def test_decode_roundtrip_and_dump_format() -> None:
    action, cfg = packet_line("> S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>")
    packet = build(action, cfg, Conn(6, 8080, 40000), inbound=False)
    decoded = decode(encode(packet))
    assert decoded is not None
    assert dump(decoded) == "S. 0:0(0) ack 1 win 0 <mss 1460,nop,nop,sackOK,nop,wscale 8>"
    assert dump(decoded, show_win=False) == "S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>"
    action, cfg = packet_line("> . 1:1(0) ack 1")
    bare = build(action, cfg, Conn(6, 8080, 40000), inbound=False)
    assert dump(bare, show_win=False) == ". 1:1(0) ack 1 "  # upstream's trailing space


def test_ace_and_ecn_flag_dumps() -> None:
    action, cfg = packet_line("> SEW 0:0(0)")
    packet = build(action, cfg, Conn(6, 8080, 40000), inbound=False)
    assert dump(packet, show_win=False) == "SEW 0:0(0) "
    assert dump(packet, show_win=False, ace_mode=True) == "S3 0:0(0) "


def test_encapsulated_dump_and_layers() -> None:
    action, cfg = packet_line("< ipv4 192.0.2.1 > 192.168.0.1: gre: udp (10)")
    packet = build(action, cfg, Conn(17, 8080, 4000), inbound=True)
    decoded = decode(encode(packet))
    assert decoded is not None and [type(h).__name__ for h in decoded.headers] == [
        "IpHeader",
        "GreHeader",
        "IpHeader",
        "UdpHeader",
    ]
    assert dump(decoded).startswith(
        "ipv4 192.0.2.1 > 192.168.0.1: gre flags 0x0 proto 0x0800: udp (10)"
    )


def test_address_defaults_per_family() -> None:
    cfg = Config(ip_version="ipv6")
    finalize(cfg)
    assert cfg.local_ip.startswith("fd3d:fa7b:d17d::") and cfg.remote_ip == "2001:db8::1"
    cfg = Config()
    finalize(cfg)
    assert cfg.local_ip.startswith("192.168.") and cfg.remote_prefix == 24


@pytest.mark.parametrize(
    "text",
    [
        "> S. 0:0(0) ack 1 <ECN e0b 1 ceb 2 e1b 3,nop,FOEXP 0011223344556677>",
        "> . 1:1(0) ack 1 <md5 000102030405060708090a0b0c0d0e0f,nop,nop>",
        "> S 0:0(0) <mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 8,FO,nop,nop>",
    ],
)
def test_less_common_options_roundtrip(text: str) -> None:
    action, cfg = packet_line(text)
    packet = build(action, cfg, Conn(6, 8080, 40000), inbound=False)
    decoded = decode(encode(packet))
    assert decoded is not None
    assert dump(decoded, show_win=False) == text[2:]


def test_mpls_and_explicit_gre_prefixes_encode_what_they_say() -> None:
    action, cfg = packet_line(
        "< ipv4 192.0.2.1 > 192.168.0.1: gre flags [key present, "
        "sequence# present] sum 0 off 0 key=7 seq 9: "
        "mpls (label 16, tc 1, [S], ttl 64): udp (4)"
    )
    decoded = decode(encode(build(action, cfg, Conn(17, 8080, 4000), inbound=True)))
    assert decoded is not None
    assert dump(decoded) == (
        "ipv4 192.0.2.1 > 192.168.0.1: gre flags 0x3000 proto 0x8847 "
        "key 0x7 seq 9: mpls (label 16, tc 1, [S], ttl 64): udp (4)"
    )
