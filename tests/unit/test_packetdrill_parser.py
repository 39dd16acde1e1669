# SPDX-License-Identifier: GPL-2.0-only
"""Lexer and parser of the packetdrill engine: the reference's lexical rules and the exact
``file:line: message`` diagnostics, checked without touching the kernel."""

import pytest

from packetdrill.errors import ConfigError, ScriptError
from packetdrill.lexer import tokenize
from packetdrill.loader import load_script
from packetdrill.model import CodeEvent, CommandEvent, PacketEvent, SyscallEvent, TcpSpec

HANDSHAKE = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
  +.1 < S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
"""


def kinds(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(text)[:-1]]


def parse(text: str, *options: tuple[str, str | None]):
    return load_script("t.pkt", list(options), text)


def error_of(text: str, *options: tuple[str, str | None]) -> str:
    with pytest.raises((ScriptError, ConfigError)) as info:
        parse(text, *options)
    return str(info.value)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1e5", [("WORD", "1e5")]),
        ("123abc", [("WORD", "123abc")]),
        ("5.", [("INTEGER", "5"), ("CHAR", ".")]),
        (".5", [("FLOAT", ".5")]),
        ("-1", [("INTEGER", "-1")]),
        ("0x1f", [("HEX", "0x1f")]),
        ("1:1001", [("INTEGER", "1"), ("CHAR", ":"), ("INTEGER", "1001")]),
        ("+0...0.100", [("CHAR", "+"), ("INTEGER", "0"), ("ELLIPSIS", "..."), ("FLOAT", "0.100")]),
        ("192.168.0.1", [("IPV4", "192.168.0.1")]),
        ("fd3d::1 >", [("IPV6", "fd3d::1"), ("CHAR", ">")]),
        ("ack acks", [("KW", "ack"), ("WORD", "acks")]),
        ("sequence#", [("KW", "sequence#")]),
        ('"a\\"b"', [("STRING", '"a\\"b"')]),
        ("S. // c\n.", [("WORD", "S"), ("CHAR", "."), ("CHAR", ".")]),
    ],
)
def test_longest_match_rules(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


def test_defines_use_strtol_and_skip_keywords() -> None:
    tokens = tokenize("X Y Z ack", {"X": "010", "Y": "0x10", "Z": "SOL_IP", "ack": "1"})
    assert [(t.kind, t.text) for t in tokens[:-1]] == [
        ("INTEGER", "8"),
        ("INTEGER", "16"),
        ("WORD", "SOL_IP"),
        ("KW", "ack"),
    ]


def test_a_script_parses_into_events_with_time_token_lines() -> None:
    script, cfg = parse(
        "--tolerance_usecs=10000\n`echo init`\n"
        + HANDSHAKE
        + "+0 %{ x = 1 }%\n+0 `true`\n`echo done`\n"
    )
    assert (cfg.tolerance.usecs, cfg.tolerance.base_from) == (10000, "script")
    assert script.init_command == "echo init" and script.cleanup_command == "echo done"
    assert [e.line for e in script.events] == [3, 4, 5, 6, 7, 8, 9]
    assert isinstance(script.events[0].action, SyscallEvent)
    syn = script.events[3].action
    assert isinstance(syn, PacketEvent) and isinstance(syn.l4, TcpSpec)
    assert (syn.l4.flags, syn.l4.win, [o.kind for o in syn.l4.options or []]) == (
        "S",
        32792,
        [2, 4, 1, 1, 1, 3],
    )
    assert isinstance(script.events[5].action, CodeEvent)
    assert isinstance(script.events[6].action, CommandEvent)


def test_time_forms() -> None:
    script, _ = parse(
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "+.1...0.2 read(3, ..., 1) = 1\n"
        "0.30~0.35 > . 1:1(0) ack 1\n"
        "+.1~+.2 > . 1:1(0) ack 1\n"
        "* > . 1:1(0) ack 1\n"
    )
    times = [e.time for e in script.events]
    assert (times[1].relative, times[1].usecs, times[1].blocking_end) == (True, 100000, 200000)
    assert (times[2].usecs, times[2].end_usecs) == (300000, 350000)
    assert (times[3].relative, times[3].end_relative, times[3].end_usecs) == (True, True, 200000)
    assert times[4].any_time


def test_command_line_options_override_script_options() -> None:
    _, cfg = parse("--tolerance_usecs=10000\n0 `true`\n", ("tolerance_usecs", "7000"))
    assert (cfg.tolerance.usecs, cfg.tolerance.base_from) == (7000, "command line")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 frob 3\n",
            "t.pkt:2: parse error at '3': syntax error",
        ),
        (
            "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3 // no newline",
            "t.pkt:1: parse error at '/': syntax error",
        ),
        (
            "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n# comment\n",
            "t.pkt:2: parse error at '#': syntax error",
        ),
        (
            "0 read(3, ..., 1) = -1 EAGAIN\n+0 close(3) = 0\n",
            "t.pkt:2: parse error at '+': syntax error",
        ),
        (
            "0 read(3, ..., 1) = -1 ENOKEY (Required key not available)\n",
            "t.pkt:1: parse error at 'key': syntax error",
        ),
        ("--tolerance_percent=12.5\n0 `true`\n", "t.pkt:1: parse error at '12.5': syntax error"),
        ("`true`\n", "t.pkt:2: parse error at '': syntax error"),
        ("0 `true`\n-1 close(3) = 0\n", "t.pkt:1: semantic error: negative time"),
        (
            "0 `true`\n+.2~+.1 > . 1:1(0) ack 1\n",
            "t.pkt:1: semantic error: time range is backwards",
        ),  # the previous statement's line
        (
            "* `true`\n",
            "t.pkt:1: semantic error: event time <star> can only be used with outbound packets",
        ),
        (
            "0~1 `true`\n",
            "t.pkt:1: semantic error: event time range can only be used with outbound packets",
        ),
        (
            "0 < . 1:1001(100) ack 1 win 1\n",
            "t.pkt:1: semantic error: inconsistent TCP sequence numbers and payload size",
        ),
        (
            "0 < . 1:1(0) ack 1\n",
            "t.pkt:1: semantic error: window must be specified for inbound packets",
        ),
        (
            "0 < . 1:1(0) ack 1 win 1 <...>\n",
            "t.pkt:1: semantic error: <...> for TCP options can only be used with outbound packets",
        ),
        (
            "0 > . 1:1(0) ack 1 <mss 1000,nop>\n",
            "t.pkt:1: semantic error: TCP options are not padded correctly to ensure TCP header "
            "is a multiple of 4 bytes: 1 excess bytes",
        ),
        ("0 > SX 0:0(0)\n", "t.pkt:1: semantic error: Invalid TCP flag: 'X'"),
        ("0 > E1 0:0(0)\n", "t.pkt:1: semantic error: Conflicting TCP flag: '1'"),
        (
            "0 > . 1:1(0) ack 1 win 70000\n",
            "t.pkt:1: semantic error: TCP window value out of range",
        ),
        ("0 < [ect0] udp (10)\n", "t.pkt:1: semantic error: ECN can only be used with TCP packets"),
        (
            "0 < [ect01] . 1:1(0) ack 1 win 1\n",
            "t.pkt:1: semantic error: [ect01] can only be used with outbound packets",
        ),
        ("0 < icmp packet_too_big\n", "t.pkt:1: semantic error: bad ICMP type packet_too_big"),
        (
            "0 < icmp unreachable no_such_code\n",
            "t.pkt:1: semantic error: bad ICMP code no_such_code",
        ),
        (
            "0 < icmp echo_request mtu 1000\n",
            "t.pkt:1: semantic error: ICMPv4 MTU is only valid for unreachable-frag_needed",
        ),
        (
            "0 > S 0:0(0) <FO abc,nop,nop>\n",
            "t.pkt:1: semantic error: TCP fast open cookie has an odd number of digits",
        ),
        ("--foo=1\n0 `true`\n", "t.pkt: option 'foo' unknown"),
        ("--dry_run=1\n0 `true`\n", "t.pkt: option 'dry_run' forbids an argument"),
        ("--ip_version=ipv5\n0 `true`\n", "t.pkt: bad --ip_version: ipv5"),
        ("--ip_version=ipv4-mapped-ipv6\n0 `true`\n", "t.pkt:1: parse error at '-': syntax error"),
        ("--bind_port=0\n0 `true`\n", "t.pkt: bad --bind_port: 0"),
    ],
)
def test_errors_have_upstreams_text_and_line(text: str, message: str) -> None:
    assert error_of(text) == message


def test_icmp_names_follow_the_ip_version() -> None:
    script, _ = parse("0 < icmp packet_too_big mtu 1280\n", ("ip_version", "ipv6"))
    assert script.events[0].action.l4.mtu == 1280


def test_bad_address_for_the_family() -> None:
    assert (
        error_of("0 `true`\n", ("ip_version", "ipv4"), ("remote_ip", "fd::1"))
        == "bad IPv4 address: fd::1"
    )


def test_defines_stand_for_tcp_option_values() -> None:
    """``-D MSS=1000`` makes ``<mss MSS, ...>`` an integer option value, as upstream's lexer
    turns a defined word into the token its value spells (a cookie stays a hex word)."""
    script, _ = parse(
        "    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "   +0 > S 0:0(0) <mss MSS,sackOK,TS val TSV ecr 0,nop,wscale WS,"
        "FO COOKIE,nop,nop>\n",
        ("define", "MSS=1000"),
        ("define", "WS=0x7"),
        ("define", "TSV=100"),
        ("define", "COOKIE=3021b9d889017eeb"),
    )
    spec = script.events[1].action.l4
    assert isinstance(spec, TcpSpec) and spec.options is not None
    assert [(o.values, o.data) for o in spec.options] == [
        ([1000], b""),
        ([], b""),
        ([100, 0], b""),
        ([], b""),
        ([7], b""),
        ([], bytes.fromhex("3021b9d889017eeb")),
        ([], b""),
        ([], b""),
    ]


@pytest.mark.parametrize(
    "line, problem",
    [
        ("+0 > 1>2 . 1:1(0) ack 1", "ports of an outbound packet are never compared"),
        ("+0 > udp 1>2 (10)", "ports of an outbound packet are never compared"),
        ("+0 > icmp echo_request id 7", "the echo id of an outbound ICMP packet"),
        ("+0 > icmp unreachable port_unreachable [udp (10)]", "quoted header is never compared"),
        ('+0 readv(3, [{"x", 1}], 1) = 1', "iovec contents are never compared"),
        (
            "+0 recvmsg(3, {msg_name(...)=5, msg_iov(1)=[{..., 1}], msg_flags=0}, 0) = 1",
            "msg_name is the engine's live address",
        ),
        (
            "+0 recvmsg(3, {msg_name(...)=..., msg_iov(1)=[{..., 1}], msg_flags=0, "
            "msg_control=[{cmsg_level=SOL_IP, cmsg_type=IP_TOS}]}, 0) = 1",
            "a cmsg needs cmsg_data",
        ),
    ],
)
def test_values_no_engine_compares_are_refused(line: str, problem: str) -> None:
    """No silent fields: what a script writes is checked, or refused here, never ignored."""
    message = error_of(
        f"0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3\n{line}\n", ("ip_version", "ipv4")
    )
    assert message.startswith("t.pkt:2: semantic error: unsupported: ") and problem in message
