# SPDX-License-Identifier: GPL-2.0-only
"""Connections and the script↔live mapping of ports, sequence numbers and timestamps
(docs/packetdrill-language.md §5.6).

Scripts write every non-SYN sequence number as if the ISN were 0 and never write ports; this
module keeps, per connection, what is needed to translate in both directions. Building the
packet for a script line lives here too because the same builder makes both the packet we
inject and the expected packet an outbound line is verified against.
"""

import ipaddress
import struct
from dataclasses import dataclass, field

from . import protocols as P
from .config import Config
from .errors import RuntimeFailure
from .model import ECT01, IcmpSpec, PacketEvent, TcpOption, TcpSpec, UdpSpec
from .wire import (
    ACK,
    AE,
    CWR,
    ECE,
    FLAG_BITS,
    SYN,
    GreHeader,
    Header,
    IcmpHeader,
    IpHeader,
    MplsHeader,
    Packet,
    TcpHeader,
    UdpHeader,
    checksum,
    link_protocols,
)

U32 = 0xFFFFFFFF


@dataclass
class Conn:
    """One flow of the socket under test, with the live values learned so far."""

    proto: int
    local_port: int = 0
    remote_port: int = 0
    listening: bool = False
    connecting: bool = False
    remote_isn: int = 0
    script_local_isn: int = 0
    live_local_isn: int = 0
    local_isn_known: bool = False
    live_fd: int | None = None
    accepted: bool = False
    children: list["Conn"] = field(default_factory=list)
    ts_map: dict[int, int] = field(default_factory=dict)
    ts_first: tuple[int, int] | None = None  # (script val, live val)
    ts_first_drift: int = 0  # the run's drift behind the script clock when ts_first was fixed
    flowlabels: dict[int, int] = field(default_factory=dict)
    addresses_known: bool = False  # an outbound packet of it was sniffed


def _flags(spec: TcpSpec) -> int:
    bits = 0
    for ch in spec.flags:
        bits |= FLAG_BITS[ch]
    if spec.ace is not None:
        bits |= (
            (ECE if spec.ace & 1 else 0)
            | (CWR if spec.ace & 2 else 0)
            | (AE if spec.ace & 4 else 0)
        )
    return bits


def _ip(cfg: Config, src: str, dst: str, info_tos: int, ttl: int, flowlabel: int) -> IpHeader:
    return IpHeader(
        6 if cfg.wire_v6 else 4,
        ipaddress.ip_address(src).packed,
        ipaddress.ip_address(dst).packed,
        tos=info_tos,
        ttl=ttl,
        flowlabel=flowlabel,
    )


def _tos_of(event: PacketEvent) -> int:
    info = event.ip_info
    if info.tos is not None:
        return info.tos
    return info.ecn if info.ecn not in (None, ECT01) else 0


def build(event: PacketEvent, cfg: Config, conn: Conn | None, inbound: bool) -> Packet:
    """The packet a script line describes, in script space with live addresses and ports.

    For inbound lines the caller then maps sequence numbers with :func:`map_inbound`.
    """
    local_port = conn.local_port if conn else 0
    remote_port = conn.remote_port if conn else 0
    src, dst = (cfg.remote_ip, cfg.local_ip) if inbound else (cfg.local_ip, cfg.remote_ip)
    sport, dport = (remote_port, local_port) if inbound else (local_port, remote_port)
    l4_spec = event.l4
    if inbound and isinstance(l4_spec, (TcpSpec, UdpSpec)):
        sport = l4_spec.sport or sport
        dport = l4_spec.dport or dport
    info = event.ip_info
    headers: list[Header] = []
    for encap in event.encaps:
        if encap.kind in ("ipv4", "ipv6"):
            outer = IpHeader(
                4 if encap.kind == "ipv4" else 6,
                ipaddress.ip_address(encap.src).packed,
                ipaddress.ip_address(encap.dst).packed,
                tos=encap.ip_info.tos or (encap.ip_info.ecn or 0),
                ttl=encap.ip_info.ttl if encap.ip_info.ttl is not None else 255,
                flowlabel=encap.ip_info.flowlabel or 0,
            )
            headers.append(outer)
        elif encap.kind == "gre":
            flags, gre_sum, gre_off, key, seq = encap.gre
            headers.append(GreHeader(flags, 0, gre_sum, gre_off, key, seq, encap.gre_explicit))
        else:
            headers.append(MplsHeader(list(encap.mpls)))
    headers.append(
        _ip(
            cfg,
            src,
            dst,
            _tos_of(event),
            info.ttl if info.ttl is not None else 255,
            info.flowlabel or 0,
        )
    )
    if isinstance(l4_spec, TcpSpec):
        headers.append(
            TcpHeader(
                sport,
                dport,
                l4_spec.start,
                l4_spec.ack,
                _flags(l4_spec),
                l4_spec.win or 0,
                l4_spec.urg,
                [
                    TcpOption(o.kind, list(o.values), o.data, list(o.ecn_names))
                    for o in l4_spec.options or []
                ],
            )
        )
    elif isinstance(l4_spec, UdpSpec):
        headers.append(UdpHeader(sport, dport, 8 + l4_spec.length))
    else:
        return _build_icmp(headers, l4_spec, cfg, conn)
    packet = Packet(headers, bytes(l4_spec.length))
    link_protocols(packet)
    return packet


def _build_icmp(headers: list[Header], spec: IcmpSpec, cfg: Config, conn: Conn | None) -> Packet:
    rest = bytearray(4)
    if spec.mtu is not None:
        rest = bytearray(
            struct.pack("!I", spec.mtu) if cfg.wire_v6 else struct.pack("!HH", 0, spec.mtu)
        )
    if spec.echo_id is not None:
        rest[0:2] = struct.pack("!H", spec.echo_id)
    headers.append(IcmpHeader(spec.type, spec.code, bytes(rest)))
    echoed = spec.echoed or ("tcp", 0, 0, 0)
    if echoed[0] == "raw":
        packet = Packet(headers, bytes(max(0, echoed[1] - 8)))
    else:
        packet = Packet(headers, quote(echoed, cfg, conn))
    link_protocols(packet)
    return packet


def quote(echoed: tuple[str, int, int, int], cfg: Config, conn: Conn | None) -> bytes:
    """The offending packet an inbound ICMP error quotes: IP header + first 8 L4 bytes of the
    socket's outbound 4-tuple, so the kernel demuxes the error to that socket."""
    local_port = conn.local_port if conn else 0
    remote_port = conn.remote_port if conn else 0
    if echoed[0] == "udp":
        proto, l4_len = P.IPPROTO_UDP, 8 + echoed[1]
        first8 = struct.pack("!HHHH", local_port, remote_port, l4_len, 0)
    else:
        proto, l4_len = P.IPPROTO_TCP, 20 + echoed[3]
        seq = (echoed[1] + (conn.live_local_isn if conn else 0)) & U32
        first8 = struct.pack("!HHI", local_port, remote_port, seq)
    src = ipaddress.ip_address(cfg.local_ip).packed
    dst = ipaddress.ip_address(cfg.remote_ip).packed
    if cfg.wire_v6:
        return struct.pack("!IHBB16s16s", 6 << 28, l4_len, proto, 64, src, dst) + first8
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + l4_len, 0, 0x4000, 64, proto, 0, src, dst)
    return head[:10] + struct.pack("!H", checksum(head)) + head[12:] + first8


# --- inbound: script → live ----------------------------------------------------------------
def map_inbound(packet: Packet, conn: Conn, cfg: Config) -> None:
    """Rewrite an inbound TCP packet's seq/ack/SACK/TS ecr into live values (in place)."""
    tcp = packet.l4
    if not isinstance(tcp, TcpHeader):
        return
    if tcp.flags & SYN:
        ack_offset = conn.live_local_isn - conn.script_local_isn
    else:
        tcp.seq = (tcp.seq + conn.remote_isn) & U32
        ack_offset = conn.live_local_isn
    if tcp.flags & ACK:  # without the ACK bit (a bare RST) the field is not a sequence number
        tcp.ack = (tcp.ack + ack_offset) & U32
    for option in tcp.options:
        if option.kind == P.TCPOPT_SACK:
            option.values = [(v + ack_offset) & U32 for v in option.values]
        elif option.kind == P.TCPOPT_TS and tcp.flags & ACK:
            option.values[1] = _live_ecr(option.values[1], conn, cfg)


def _live_ecr(script_ecr: int, conn: Conn, cfg: Config) -> int:
    if script_ecr in conn.ts_map:
        return conn.ts_map[script_ecr]
    if cfg.tcp_ts_ecr_scaled and conn.ts_first is not None:
        return (script_ecr - conn.ts_first[0] + conn.ts_first[1]) & U32
    raise RuntimeFailure(
        f"unable to infer live TS ecr for script TS ecr {script_ecr};  "
        "no matching or preceding outbound TS val"
    )


# --- outbound: live → script -------------------------------------------------------------
def learn_syn(conn: Conn, live: TcpHeader, script: TcpSpec) -> None:
    """The first outbound SYN/SYN-ACK fixes the local ISN pair used by every later mapping."""
    if live.flags & SYN and not conn.local_isn_known:
        conn.live_local_isn = live.seq
        conn.script_local_isn = script.start
        conn.local_isn_known = True


def map_outbound(packet: Packet, conn: Conn, cfg: Config) -> Packet:
    """A copy of a sniffed packet with seq/ack/SACK/TS val translated into script space and
    the inner addresses replaced by the script tuple (they are never compared)."""
    mapped = packet.copy()
    ip = mapped.inner_ip
    ip.src = ipaddress.ip_address(cfg.local_ip).packed
    ip.dst = ipaddress.ip_address(cfg.remote_ip).packed
    tcp = mapped.l4
    if not isinstance(tcp, TcpHeader):
        return mapped
    if tcp.flags & SYN:
        tcp.seq = (tcp.seq - conn.live_local_isn + conn.script_local_isn) & U32
    else:
        tcp.seq = (tcp.seq - conn.live_local_isn) & U32
        if tcp.flags & ACK:
            tcp.ack = (tcp.ack - conn.remote_isn) & U32
    tcp.options = [
        TcpOption(o.kind, list(o.values), o.data, list(o.ecn_names)) for o in tcp.options
    ]
    for option in tcp.options:
        if option.kind == P.TCPOPT_SACK:
            option.values = [(v - conn.remote_isn) & U32 for v in option.values]
        elif option.kind == P.TCPOPT_TS and conn.ts_first is not None:
            option.values[0] = (conn.ts_first[0] + option.values[0] - conn.ts_first[1]) & U32
    return mapped


def record_ts(conn: Conn, live: TcpHeader, script: TcpSpec) -> None:
    """Remember script TS val → live TS val, so inbound ``ecr`` can echo the live value."""
    script_ts = next((o for o in script.options or [] if o.kind == P.TCPOPT_TS), None)
    live_ts = next((o for o in live.options if o.kind == P.TCPOPT_TS), None)
    if script_ts is None or live_ts is None:
        return
    conn.ts_map[script_ts.values[0]] = live_ts.values[0]
    if conn.ts_first is None:
        conn.ts_first = (script_ts.values[0], live_ts.values[0])
