# SPDX-License-Identifier: GPL-2.0-only
"""Outbound verification order and messages (docs/packetdrill-language.md §5.7), TSO merging
(§5.8) and the script↔live sequence mapping (§5.6), on hand-built packets."""

import pytest

from packetdrill.config import Config
from packetdrill.conn import Conn, build, learn_syn, map_outbound
from packetdrill.errors import RuntimeFailure
from packetdrill.loader import load_script
from packetdrill.matcher import fragment_problem, merge, verify
from packetdrill.model import PacketEvent, TcpSpec
from packetdrill.wire import Packet, TcpHeader, decode, encode

ISN = 1_000_000


def line(text: str) -> tuple[PacketEvent, Config]:
    script, cfg = load_script("t.pkt", [("ip_version", "ipv4")], f"0 {text}\n")
    action = script.events[0].action
    assert isinstance(action, PacketEvent)
    return action, cfg


def live(text: str, seq_shift: int = ISN) -> Packet:
    """A 'live' packet: the script line's packet with the local ISN added to its seq."""
    action, cfg = line(text)
    packet = decode(encode(build(action, cfg, Conn(6, 8080, 40000), inbound=False)))
    assert packet is not None and isinstance(packet.l4, TcpHeader)
    packet.l4.seq += seq_shift
    return packet


def check(script_line: str, actual: Packet) -> None:
    action, cfg = line(script_line)
    conn = Conn(6, 8080, 40000, live_local_isn=ISN, local_isn_known=True)
    expected = build(action, cfg, conn, inbound=False)
    verify(expected, map_outbound(actual, conn, cfg), action, cfg, 4000)


def test_a_matching_packet_passes_and_win_is_optional() -> None:
    check("> P. 1:1001(1000) ack 1", live("> P. 1:1001(1000) ack 1 win 500"))
    with pytest.raises(RuntimeFailure, match=r"tcp_window: expected: 600 .* actual: 500"):
        check("> P. 1:1001(1000) ack 1 win 600", live("> P. 1:1001(1000) ack 1 win 500"))


@pytest.mark.parametrize(
    "script_line, actual_line, message",
    [
        (
            "> . 1:1(0) ack 1",
            "> . 1:1(0) ack 1 <nop,nop,TS val 1 ecr 2>",
            "live packet field ipv4_total_length: expected: 40 (0x28) vs actual: 52 (0x34)",
        ),
        (
            "> F. 1:1(0) ack 1",
            "> . 1:1(0) ack 1",
            "live packet field tcp_fin: expected: 1 (0x1) vs actual: 0 (0x0)",
        ),
        (
            "> . 2:2(0) ack 1",
            "> . 1:1(0) ack 1",
            "live packet field tcp_seq: expected: 2 (0x2) vs actual: 1 (0x1)",
        ),
        (
            "> . 1:1(0) ack 5",
            "> . 1:1(0) ack 1",
            "live packet field tcp_ack_seq: expected: 5 (0x5) vs actual: 1 (0x1)",
        ),
        (
            "> . 1:1(0) ack 1 <mss 1000>",
            "> . 1:1(0) ack 1 <mss 1460>",
            "bad value in outbound TCP option (kind=2): expected: mss 1000 actual: mss 1460",
        ),
        (
            "> . 1:1(0) ack 1 <nop,nop,sack 1:2>",
            "> . 1:1(0) ack 1 <nop,nop,TS val 1 ecr 2>",
            "bad outbound TCP options",
        ),
    ],
)
def test_first_difference_is_reported(script_line: str, actual_line: str, message: str) -> None:
    with pytest.raises(RuntimeFailure) as info:
        check(script_line, live(actual_line))
    assert str(info.value) == message


def test_options_wildcard_accepts_any_options() -> None:
    check("> . 1:1(0) ack 1 <...>", live("> . 1:1(0) ack 1 <nop,nop,TS val 1 ecr 2>"))


def test_tso_fragments_merge_into_one_segment() -> None:
    first = live("> . 1:1001(1000) ack 1")
    second = live("> P. 1001:2001(1000) ack 1")
    assert not fragment_problem(first, second, 1000)
    merged = merge([first, second])
    assert isinstance(merged.l4, TcpHeader)
    assert (merged.l4.seq, len(merged.payload), merged.inner_ip.length) == (ISN + 1, 2000, 2040)
    check("> P. 1:2001(2000) ack 1", merged)  # PSH comes from the last
    assert fragment_problem(first, live("> . 1501:2501(1000) ack 1"), 1000)  # a gap
    assert fragment_problem(first, live("> . 1001:2001(1000) ack 7"), 1000)  # ack changed


def test_syn_sets_the_isn_pair_and_later_seqs_are_relative() -> None:
    action, cfg = line("> S. 0:0(0) ack 1 <mss 1460>")
    conn = Conn(6, 8080, 40000, remote_isn=5000)
    syn = live("> S. 0:0(0) ack 1 <mss 1460>", seq_shift=777)
    assert isinstance(action.l4, TcpSpec) and isinstance(syn.l4, TcpHeader)
    learn_syn(conn, syn.l4, action.l4)
    assert (conn.live_local_isn, conn.script_local_isn) == (777, 0)
    data = live("> . 1:1(0) ack 5001", seq_shift=777)
    mapped = map_outbound(data, conn, cfg)
    assert isinstance(mapped.l4, TcpHeader) and (mapped.l4.seq, mapped.l4.ack) == (1, 1)


def test_outer_addresses_and_ttl_of_an_encapsulated_packet_are_checked() -> None:
    wanted = "> ipv4 (ttl 3) 10.0.0.1 > 10.0.0.2: . 1:1(0) ack 1"
    check(wanted, live(wanted))
    with pytest.raises(
        RuntimeFailure,
        match=r"layer 0 addresses: expected: 10.0.0.1 > "
        r"10.0.0.2 vs actual: 10.0.0.1 > 10.0.0.9",
    ):
        check(wanted, live(wanted.replace("10.0.0.2", "10.0.0.9")))
    with pytest.raises(RuntimeFailure, match=r"ipv4_ttl: expected: 3 .* actual: 4"):
        check(wanted, live(wanted.replace("ttl 3", "ttl 4")))


def test_an_outbound_icmp_mtu_is_checked() -> None:
    def icmp(text: str) -> tuple[PacketEvent, Config, Packet]:
        action, cfg = line(text)
        return action, cfg, build(action, cfg, Conn(1), inbound=False)

    action, cfg, expected = icmp("> icmp unreachable frag_needed mtu 1400")
    _, _, same = icmp("> icmp unreachable frag_needed mtu 1400")
    _, _, other = icmp("> icmp unreachable frag_needed mtu 1300")
    verify(expected, same, action, cfg, 4000)
    with pytest.raises(RuntimeFailure, match=r"icmp_mtu: expected: 1400 .* actual: 1300"):
        verify(expected, other, action, cfg, 4000)
