# SPDX-License-Identifier: GPL-2.0-only
"""Verifying a sniffed packet against a script line (docs/packetdrill-language.md §5.7) and TSO
fragment merging (§5.8).

Checks run in upstream's order and stop at the first difference, with upstream's field names,
because that first message is what users and tools key on.
"""

from ipaddress import ip_address

from . import protocols as P
from .config import Config
from .dump import format_option
from .errors import RuntimeFailure, TimelineDrift
from .model import ECT01, IcmpSpec, IpInfo, PacketEvent, TcpOption, TcpSpec, UdpSpec
from .wire import (
    ACK,
    AE,
    CWR,
    ECE,
    FIN,
    PSH,
    RST,
    SYN,
    URG,
    GreHeader,
    Header,
    IcmpHeader,
    IpHeader,
    MplsHeader,
    Packet,
    TcpHeader,
    UdpHeader,
    encode,
    encode_tcp_options,
)


def _field(name: str, expected: int, actual: int) -> None:
    if expected != actual:
        raise RuntimeFailure(
            f"live packet field {name}: expected: {expected} (0x{expected:x}) "
            f"vs actual: {actual} (0x{actual:x})"
        )


def layer_name(header: Header) -> str:
    if isinstance(header, IpHeader):
        return f"ipv{header.version}"
    if isinstance(header, IcmpHeader):
        return "icmp"
    return {GreHeader: "gre", MplsHeader: "mpls", TcpHeader: "tcp", UdpHeader: "udp"}[type(header)]


def check_ip_checksums(actual: Packet) -> None:
    if any(isinstance(h, IpHeader) and not h.checksum_ok for h in actual.headers):
        raise RuntimeFailure("bad outbound IP checksum")


def verify(
    expected: Packet,
    actual: Packet,
    event: PacketEvent,
    cfg: Config,
    ts_check: tuple[int, int],
) -> None:
    """Raise :class:`RuntimeFailure` with the first difference (``actual`` already mapped).

    ``ts_check`` is (tolerance, drift) for TCP timestamp values, both in usecs: the drift is how
    much later than the script's own clock this packet's event is due, counted from the packet
    that fixed the timestamp mapping (see :class:`TimelineDrift`)."""
    if len(expected.headers) != len(actual.headers):
        raise RuntimeFailure(
            f"live packet header layers: expected: {len(expected.headers)} "
            f"headers vs actual: {len(actual.headers)} headers"
        )
    for i, (want, got) in enumerate(zip(expected.headers, actual.headers, strict=True)):
        if layer_name(want) != layer_name(got) or (
            isinstance(want, IpHeader) and isinstance(got, IpHeader) and want.version != got.version
        ):
            raise RuntimeFailure(
                f"live packet header layer {i}: expected: {layer_name(want)} "
                f"header vs actual: {layer_name(got)} header"
            )
    spec = event.l4
    extra_opts = 0
    if isinstance(spec, TcpSpec) and spec.options is None:
        got_tcp = actual.l4
        assert isinstance(got_tcp, TcpHeader)
        extra_opts = got_tcp.doff - 20
    lengths = _layer_lengths(expected, extra_opts)
    inner = max(i for i, h in enumerate(expected.headers) if isinstance(h, IpHeader))
    for i, (want, got) in enumerate(zip(expected.headers, actual.headers, strict=True)):
        if isinstance(want, IpHeader) and isinstance(got, IpHeader):
            _check_ip(want, got, lengths[i], event if i == inner else None)
            if i != inner:  # an encapsulation header: headers[i] is event.encaps[i]
                _check_outer_ip(i, want, got, event.encaps[i].ip_info)
        elif isinstance(want, GreHeader) and isinstance(got, GreHeader):
            _check_gre(want, got)
        elif isinstance(want, MplsHeader) and isinstance(got, MplsHeader):
            _check_mpls(want, got)
    _check_l4(expected, actual, spec)
    if isinstance(spec, TcpSpec) and spec.options is not None:
        got_tcp = actual.l4
        assert isinstance(got_tcp, TcpHeader)
        _check_options(spec.options, got_tcp.options, cfg, ts_check)
    if not isinstance(actual.l4, IcmpHeader) and any(actual.payload):
        raise RuntimeFailure("incorrect outbound data payload")


def _layer_lengths(packet: Packet, extra: int) -> list[int]:
    """Length each IP layer's length field should hold (v4 total, v6 payload)."""
    raw = encode(packet.copy())
    lengths = []
    offset = 0
    for header in packet.headers:
        remaining = len(raw) - offset + extra
        if isinstance(header, IpHeader):
            lengths.append(remaining if header.version == 4 else remaining - 40)
            offset += 20 if header.version == 4 else 40
        else:
            lengths.append(0)
            if isinstance(header, GreHeader):
                offset += 4 + 4 * bin(header.flags & 0xB000).count("1")
            elif isinstance(header, MplsHeader):
                offset += 4 * len(header.entries)
    return lengths


def _check_ip(want: IpHeader, got: IpHeader, length: int, event: PacketEvent | None) -> None:
    info = event.ip_info if event else None
    if event is not None and not isinstance(event.l4, (TcpSpec, UdpSpec)):
        length = got.length  # ICMP errors quote as much as fits: only type and code count
    if want.version == 4:
        _field("ipv4_version", 4, got.version)
        _field("ipv4_protocol", want.proto, got.proto)
        _field("ipv4_header_length", 5, got.ihl // 4)
        _field("ipv4_total_length", length, got.length)
    else:
        _field("ipv6_version", 6, got.version)
        _field("ipv6_payload_len", length, got.length)
        _field("ipv6_next_header", want.proto, got.proto)
    if info is not None:
        _check_ip_info(info, want.version, got)


def _check_outer_ip(index: int, want: IpHeader, got: IpHeader, info: IpInfo) -> None:
    """An outbound encapsulation header's literal addresses and written TOS/TTL (upstream
    compares neither; nothing a script writes may pass unchecked)."""
    if (want.src, want.dst) != (got.src, got.dst):
        raise RuntimeFailure(
            f"live packet header layer {index} addresses: expected: "
            f"{ip_address(want.src)} > {ip_address(want.dst)} vs actual: "
            f"{ip_address(got.src)} > {ip_address(got.dst)}"
        )
    _check_ip_info(info, want.version, got)


def _check_ip_info(info: IpInfo, version: int, got: IpHeader) -> None:
    if info.ecn == ECT01:
        if got.tos & 3 not in (1, 2):
            raise RuntimeFailure(
                f"live packet field ip_ecn: expected: 0x1 or 0x2 vs actual: 0x{got.tos & 3:x}"
            )
    elif info.ecn is not None:
        _field("ip_ecn", info.ecn, got.tos & 3)
    elif info.tos is not None:
        _field("tos", info.tos, got.tos)
    if info.ttl is not None:  # upstream skips 255 ("no check"); a written TTL is checked
        _field("ipv4_ttl" if version == 4 else "ipv6_hop_limit", info.ttl, got.ttl)


def _check_gre(want: GreHeader, got: GreHeader) -> None:
    pairs = [("flags", want.flags, got.flags), ("proto", want.proto, got.proto)]
    if want.explicit:
        pairs += [
            ("sum", want.sum, got.sum),
            ("off", want.off, got.off),
            ("key", want.key, got.key),
            ("seq", want.seq, got.seq),
        ]
    for name, a, b in pairs:
        if name == "proto" and not a:
            continue
        if a != b:
            raise RuntimeFailure(f"mismatch in GRE {name}")


def _check_mpls(want: MplsHeader, got: MplsHeader) -> None:
    if len(want.entries) != len(got.entries):
        raise RuntimeFailure("mismatch in MPLS label stack depth")
    for i, (a, b) in enumerate(zip(want.entries, got.entries, strict=True)):
        if a != b:
            raise RuntimeFailure(f"mismatch in MPLS label {i}")


def _check_l4(expected: Packet, actual: Packet, spec: object) -> None:
    want, got = expected.l4, actual.l4
    if isinstance(want, TcpHeader) and isinstance(got, TcpHeader):
        assert isinstance(spec, TcpSpec)
        if spec.options is not None:
            _field("tcp_data_offset", 5 + _opt_words(want), got.doff // 4)
        for name, bit in (
            ("fin", FIN),
            ("syn", SYN),
            ("rst", RST),
            ("psh", PSH),
            ("ack", ACK),
            ("urg", URG),
        ):
            _field(f"tcp_{name}", int(bool(want.flags & bit)), int(bool(got.flags & bit)))
        if spec.ace is not None:
            _field("tcp_ace", _ace(want.flags), _ace(got.flags))
        else:
            for name, bit in (("ece", ECE), ("cwr", CWR), ("ae", AE)):
                _field(f"tcp_{name}", int(bool(want.flags & bit)), int(bool(got.flags & bit)))
        _field("tcp_reserved_bits", 0, got.reserved)
        _field("tcp_seq", want.seq, got.seq)
        _field("tcp_ack_seq", want.ack, got.ack)
        if spec.win is not None:
            _field("tcp_window", want.win, got.win)
        _field("tcp_urg_ptr", want.urg, got.urg)
    elif isinstance(want, UdpHeader) and isinstance(got, UdpHeader):
        _field("udp_len", want.length, got.length)
    elif isinstance(want, IcmpHeader) and isinstance(got, IcmpHeader):
        _field("icmp_type", want.type, got.type)
        _field("icmp_code", want.code, got.code)
        if isinstance(spec, IcmpSpec) and spec.mtu is not None:
            # The MTU is the header's last 2 (ICMPv4) or 4 (ICMPv6) bytes.
            size = 4 if expected.inner_ip.version == 6 else 2
            _field("icmp_mtu", spec.mtu, int.from_bytes(got.rest[4 - size :], "big"))


def _opt_words(tcp: TcpHeader) -> int:
    return len(encode_tcp_options(tcp.options)) // 4


def _ace(flags: int) -> int:
    return (1 if flags & ECE else 0) | (2 if flags & CWR else 0) | (4 if flags & AE else 0)


def _check_options(
    want: list[TcpOption], got: list[TcpOption], cfg: Config, ts_check: tuple[int, int]
) -> None:
    if [o.kind for o in want] != [o.kind for o in got]:
        raise RuntimeFailure("bad outbound TCP options")
    for a, b in zip(want, got, strict=True):
        if a.kind in (P.TCPOPT_NOP, P.TCPOPT_EOL):
            continue
        if a.kind == P.TCPOPT_TS:
            _check_ts_value(a.values[0], b.values[0], cfg.tcp_ts_tick_usecs, ts_check)
            # Upstream never compares the echo reply; it is exact (the inbound TS val the
            # kernel echoes is sent unmapped), so a wrong one must not pass.
            if a.values[1] != b.values[1]:
                raise RuntimeFailure(
                    f"bad outbound TCP timestamp echo reply: expected: "
                    f"{a.values[1]} actual: {b.values[1]}"
                )
            continue
        raw_a, raw_b = encode_tcp_options([a]), encode_tcp_options([b])
        if raw_a != raw_b:
            what = "bad length" if len(raw_a) != len(raw_b) else "bad value"
            raise RuntimeFailure(
                f"{what} in outbound TCP option (kind={a.kind}): expected: "
                f"{format_option(a)} actual: {format_option(b)}"
            )


def _check_ts_value(script: int, live: int, tick: int, ts_check: tuple[int, int]) -> None:
    """Upstream's rule (the live value within the tolerance of the script's), except where the
    difference is this run's drift behind the script's clock and the value is right for when
    the packet left: then the machine was late, which the policy judges (never a pass)."""
    tolerance, drift = ts_check
    off = (live - script) * tick
    if not tick or abs(off) <= tolerance:
        return
    if drift > tolerance and abs(off - drift) <= tolerance:
        raise TimelineDrift(
            f"timing error: expected TCP timestamp value {script} but got {live}, "
            f"{off / 1000:+.1f} ms off the script's clock and right for when the packet left: "
            f"this run's timeline fell {drift / 1000:.1f} ms behind the script's (the machine "
            "stalled)",
            drift,
        )
    raise RuntimeFailure(f"bad outbound TCP timestamp value, tolerance {tolerance}")


# --- TSO super-segments ------------------------------------------------------------------
_STABLE = SYN | RST | ACK | URG | ECE | AE


def flow(packet: Packet) -> tuple[bytes, bytes, int, int]:
    """The address/port 4-tuple of a packet: TSO pieces of one train share it."""
    l4 = packet.l4
    ports = (l4.sport, l4.dport) if isinstance(l4, (TcpHeader, UdpHeader)) else (0, 0)
    return (packet.inner_ip.src, packet.inner_ip.dst) + ports


def fragment_problem(previous: Packet, fragment: Packet, first_size: int) -> bool:
    """True if ``fragment`` cannot continue ``previous`` as part of one TSO train."""
    a, b = previous.l4, fragment.l4
    if not isinstance(a, TcpHeader) or not isinstance(b, TcpHeader):
        return True
    if [layer_name(h) for h in previous.headers] != [layer_name(h) for h in fragment.headers]:
        return True
    if (a.flags & _STABLE) != (b.flags & _STABLE) or (a.ack, a.win, a.urg) != (b.ack, b.win, b.urg):
        return True
    if b.seq != (a.seq + len(previous.payload)) & 0xFFFFFFFF:
        return True
    return len(previous.payload) != first_size


def merge(fragments: list[Packet]) -> Packet:
    """Headers from the last fragment, seq and CWR from the first, payloads concatenated."""
    merged = fragments[-1].copy()
    first, last = fragments[0].l4, merged.l4
    assert isinstance(first, TcpHeader) and isinstance(last, TcpHeader)
    last.seq = first.seq
    last.flags = (last.flags & ~CWR) | (first.flags & CWR)
    merged.payload = b"".join(f.payload for f in fragments)
    grown = len(merged.payload) - len(fragments[-1].payload)
    for header in merged.headers:
        if isinstance(header, IpHeader):
            header.length += grown  # the IP length must describe the merged payload
    return merged
