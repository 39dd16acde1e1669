# SPDX-License-Identifier: GPL-2.0-only
"""Wire format: decode raw IP packets into header objects and encode them back.

Hand-written with ``struct`` because this is the hot path of every injected and sniffed
packet, and importing scapy alone costs ~250 ms per script (measured; see
``scripts/bench-packetdrill``), more than the whole per-script budget. The format is tiny:
IPv4/IPv6, GRE, MPLS, TCP, UDP, ICMP.
"""

import struct
from dataclasses import dataclass, field, replace
from itertools import pairwise

from . import protocols as P
from .errors import RuntimeFailure
from .model import TcpOption

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR, AE = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x100
FLAG_BITS = {
    "F": FIN,
    "S": SYN,
    "R": RST,
    "P": PSH,
    ".": ACK,
    "U": URG,
    "E": ECE,
    "W": CWR,
    "A": AE,
}


@dataclass
class IpHeader:
    version: int
    src: bytes
    dst: bytes
    proto: int = 0
    tos: int = 0
    ttl: int = 255
    flowlabel: int = 0
    ihl: int = 20  # header length in bytes (IPv4)
    length: int = 0  # total length (v4) or payload length (v6), as decoded
    checksum_ok: bool = True


@dataclass
class GreHeader:
    flags: int = 0
    proto: int = 0
    sum: int = 0
    off: int = 0
    key: int = 0
    seq: int = 0
    explicit: bool = False


@dataclass
class MplsHeader:
    entries: list[tuple[int, int, bool, int]] = field(default_factory=list)


@dataclass
class TcpHeader:
    sport: int
    dport: int
    seq: int = 0
    ack: int = 0
    flags: int = 0
    win: int = 0
    urg: int = 0
    options: list[TcpOption] = field(default_factory=list)
    doff: int = 20  # header length in bytes, as decoded
    reserved: int = 0


@dataclass
class UdpHeader:
    sport: int
    dport: int
    length: int = 0


@dataclass
class IcmpHeader:
    type: int
    code: int
    rest: bytes = b"\0\0\0\0"  # bytes 4..7 (id/seq, mtu, unused)


Header = IpHeader | GreHeader | MplsHeader | TcpHeader | UdpHeader | IcmpHeader


@dataclass
class Packet:
    """A decoded packet: headers outermost first, then the L4 payload."""

    headers: list[Header]
    payload: bytes = b""

    @property
    def l4(self) -> Header:
        return self.headers[-1]

    @property
    def inner_ip(self) -> IpHeader:
        return next(h for h in reversed(self.headers) if isinstance(h, IpHeader))

    def copy(self) -> "Packet":
        return Packet([replace(h) for h in self.headers], self.payload)


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


# --- TCP options ---------------------------------------------------------------------------
def encode_tcp_options(options: list[TcpOption]) -> bytes:
    out = bytearray()
    for option in options:
        kind, values, data = option.kind, option.values, option.data
        if kind in (P.TCPOPT_NOP, P.TCPOPT_EOL):
            out.append(kind)
        elif kind == P.TCPOPT_MSS:
            out += struct.pack("!BBH", kind, 4, values[0])
        elif kind == P.TCPOPT_WSCALE:
            out += struct.pack("!BBB", kind, 3, values[0])
        elif kind == P.TCPOPT_SACK_PERM:
            out += bytes((kind, 2))
        elif kind == P.TCPOPT_SACK:
            out += struct.pack(f"!BB{len(values)}I", kind, 2 + 4 * len(values), *values)
        elif kind == P.TCPOPT_TS:
            out += struct.pack("!BBII", kind, 10, values[0], values[1])
        elif kind in (P.TCPOPT_ACCECN0, P.TCPOPT_ACCECN1):
            out += bytes((kind, 2 + 3 * len(values)))
            for value in values:
                out += value.to_bytes(3, "big")
        elif kind == P.TCPOPT_EXP:
            out += struct.pack("!BBH", kind, 4 + len(data), P.TCPOPT_FO_MAGIC) + data
        else:
            out += bytes((kind, 2 + len(data))) + data
    return bytes(out)


def decode_tcp_options(raw: bytes) -> list[TcpOption]:
    """Parse live TCP options; a malformed list is a packet error like upstream's."""
    options: list[TcpOption] = []
    i = 0
    while i < len(raw):
        kind = raw[i]
        if kind in (P.TCPOPT_NOP, P.TCPOPT_EOL):
            options.append(TcpOption(kind))
            i += 1
            continue
        if i + 1 >= len(raw) or raw[i + 1] < 2 or i + raw[i + 1] > len(raw):
            raise RuntimeFailure(f"unexpected TCP option kind: {kind}")
        body = raw[i + 2 : i + raw[i + 1]]
        i += raw[i + 1]
        options.append(_decode_option(kind, body))
    return options


def _decode_option(kind: int, body: bytes) -> TcpOption:
    if kind == P.TCPOPT_MSS and len(body) == 2:
        return TcpOption(kind, [struct.unpack("!H", body)[0]])
    if kind == P.TCPOPT_WSCALE and len(body) == 1:
        return TcpOption(kind, [body[0]])
    if kind == P.TCPOPT_SACK_PERM and not body:
        return TcpOption(kind)
    if kind == P.TCPOPT_SACK and len(body) % 8 == 0:
        return TcpOption(kind, list(struct.unpack(f"!{len(body) // 4}I", body)))
    if kind == P.TCPOPT_TS and len(body) == 8:
        return TcpOption(kind, list(struct.unpack("!II", body)))
    if kind in (P.TCPOPT_ACCECN0, P.TCPOPT_ACCECN1) and len(body) % 3 == 0:
        names = ["e0b", "ceb", "e1b"] if kind == P.TCPOPT_ACCECN0 else ["e1b", "ceb", "e0b"]
        values = [int.from_bytes(body[j : j + 3], "big") for j in range(0, len(body), 3)]
        return TcpOption(kind, values, ecn_names=names[: len(values)])
    if kind == P.TCPOPT_EXP and len(body) >= 2 and body[:2] == b"\xf9\x89":
        return TcpOption(kind, data=body[2:])
    if kind in (P.TCPOPT_MD5, P.TCPOPT_FO):
        return TcpOption(kind, data=body)
    raise RuntimeFailure(f"unexpected TCP option kind: {kind}")


# --- decoding ------------------------------------------------------------------------------
def decode(raw: bytes) -> Packet | None:
    """Decode an IP packet; None if it is not something we understand (e.g. truncated)."""
    try:
        return _decode(raw)
    except (struct.error, IndexError, RuntimeFailure):
        return None


def _decode(raw: bytes) -> Packet:
    headers: list[Header] = []
    data = raw
    proto = _ip_version_proto(data)
    while True:
        if proto == "ipv4":
            ihl = (data[0] & 0x0F) * 4
            tos, total, ttl, nxt = data[1], struct.unpack("!H", data[2:4])[0], data[8], data[9]
            ok = checksum(data[:ihl]) == 0
            headers.append(IpHeader(4, data[12:16], data[16:20], nxt, tos, ttl, 0, ihl, total, ok))
            data = data[ihl:total]
            proto = _l4_name(nxt)
        elif proto == "ipv6":
            word, plen, nxt, hops = struct.unpack("!IHBB", data[:8])
            headers.append(
                IpHeader(
                    6,
                    data[8:24],
                    data[24:40],
                    nxt,
                    (word >> 20) & 0xFF,
                    hops,
                    word & 0xFFFFF,
                    40,
                    plen,
                )
            )
            data = data[40 : 40 + plen]
            proto = _l4_name(nxt)
        elif proto == "gre":
            flags, ethertype = struct.unpack("!HH", data[:4])
            gre = GreHeader(flags, ethertype)
            offset = 4
            if flags & 0x8000:
                gre.sum, gre.off = struct.unpack("!HH", data[offset : offset + 4])
                offset += 4
            if flags & 0x2000:
                gre.key = struct.unpack("!I", data[offset : offset + 4])[0]
                offset += 4
            if flags & 0x1000:
                gre.seq = struct.unpack("!I", data[offset : offset + 4])[0]
                offset += 4
            headers.append(gre)
            data = data[offset:]
            proto = {P.ETH_P_IP: "ipv4", P.ETH_P_IPV6: "ipv6", P.ETH_P_MPLS_UC: "mpls"}.get(
                ethertype, ""
            )
        elif proto == "mpls":
            mpls = MplsHeader()
            while True:
                (entry,) = struct.unpack("!I", data[:4])
                data = data[4:]
                bottom = bool(entry & 0x100)
                mpls.entries.append((entry >> 12, (entry >> 9) & 7, bottom, entry & 0xFF))
                if bottom:
                    break
            headers.append(mpls)
            proto = _ip_version_proto(data)
        elif proto == "tcp":
            sport, dport, seq, ack, off, flags, win, _csum, urg = struct.unpack(
                "!HHIIBBHHH", data[:20]
            )
            doff = (off >> 4) * 4
            tcp = TcpHeader(
                sport,
                dport,
                seq,
                ack,
                flags | ((off & 1) << 8),
                win,
                urg,
                decode_tcp_options(data[20:doff]),
                doff,
                (off >> 1) & 7,
            )
            headers.append(tcp)
            return Packet(headers, data[doff:])
        elif proto == "udp":
            sport, dport, length = struct.unpack("!HHH", data[:6])
            headers.append(UdpHeader(sport, dport, length))
            return Packet(headers, data[8:])
        elif proto in ("icmp", "icmpv6"):
            headers.append(IcmpHeader(data[0], data[1], data[4:8]))
            return Packet(headers, data[8:])
        else:
            raise RuntimeFailure("unsupported protocol")


def _ip_version_proto(data: bytes) -> str:
    return {4: "ipv4", 6: "ipv6"}.get(data[0] >> 4, "")


def _l4_name(proto: int) -> str:
    return {
        P.IPPROTO_TCP: "tcp",
        P.IPPROTO_UDP: "udp",
        P.IPPROTO_ICMP: "icmp",
        P.IPPROTO_ICMPV6: "icmpv6",
        P.IPPROTO_GRE: "gre",
        P.IPPROTO_IPIP: "ipv4",
        P.IPPROTO_IPV6: "ipv6",
    }.get(proto, "")


# --- encoding ------------------------------------------------------------------------------
def link_protocols(packet: Packet) -> None:
    """Set every IP header's protocol / next-header field from the header that follows it."""
    for outer, inner in pairwise(packet.headers):
        if isinstance(outer, IpHeader):
            outer.proto = _proto_of(inner, outer.version)
        elif isinstance(outer, GreHeader) and not outer.proto:
            outer.proto = _ethertype_of(inner)


def encode(packet: Packet) -> bytes:
    """Serialize with correct lengths and full checksums (IPv4 header, TCP/UDP/ICMP)."""
    link_protocols(packet)
    return _encode(packet.headers, packet.payload, None)


def _encode(headers: list[Header], payload: bytes, pseudo_ip: IpHeader | None) -> bytes:
    header, rest = headers[0], headers[1:]
    if isinstance(header, IpHeader):
        inner = _encode(rest, payload, header)
        return _encode_ip(header, inner)
    if isinstance(header, GreHeader):
        inner = _encode(rest, payload, None)
        proto = header.proto or _ethertype_of(rest[0])
        extra = b""
        if header.flags & 0x8000:
            extra += struct.pack("!HH", header.sum, header.off)
        if header.flags & 0x2000:
            extra += struct.pack("!I", header.key)
        if header.flags & 0x1000:
            extra += struct.pack("!I", header.seq)
        return struct.pack("!HH", header.flags, proto) + extra + inner
    if isinstance(header, MplsHeader):
        inner = _encode(rest, payload, None)
        stack = b"".join(
            struct.pack("!I", (label << 12) | (tc << 9) | (int(bottom) << 8) | ttl)
            for label, tc, bottom, ttl in header.entries
        )
        return stack + inner
    assert pseudo_ip is not None, "an L4 header needs an IP header around it"
    if isinstance(header, TcpHeader):
        opts = encode_tcp_options(header.options)
        doff = 20 + len(opts)
        segment = (
            struct.pack(
                "!HHIIBBHHH",
                header.sport,
                header.dport,
                header.seq & 0xFFFFFFFF,
                header.ack & 0xFFFFFFFF,
                ((doff // 4) << 4) | (header.flags >> 8 & 1),
                header.flags & 0xFF,
                header.win,
                0,
                header.urg,
            )
            + opts
            + payload
        )
        return _with_l4_checksum(segment, 16, pseudo_ip, P.IPPROTO_TCP)
    if isinstance(header, UdpHeader):
        datagram = struct.pack("!HHHH", header.sport, header.dport, 8 + len(payload), 0) + payload
        return _with_l4_checksum(datagram, 6, pseudo_ip, P.IPPROTO_UDP)
    assert isinstance(header, IcmpHeader)
    message = struct.pack("!BBH", header.type, header.code, 0) + header.rest + payload
    if pseudo_ip.version == 6:
        return _with_l4_checksum(message, 2, pseudo_ip, P.IPPROTO_ICMPV6)
    return message[:2] + struct.pack("!H", checksum(message)) + message[4:]


def _with_l4_checksum(segment: bytes, at: int, ip: IpHeader, proto: int) -> bytes:
    if ip.version == 4:
        pseudo = ip.src + ip.dst + struct.pack("!BBH", 0, proto, len(segment))
    else:
        pseudo = ip.src + ip.dst + struct.pack("!IxxxB", len(segment), proto)
    value = checksum(pseudo + segment)
    if proto == P.IPPROTO_UDP and value == 0:
        value = 0xFFFF
    return segment[:at] + struct.pack("!H", value) + segment[at + 2 :]


def _encode_ip(ip: IpHeader, inner: bytes) -> bytes:
    if ip.version == 4:
        head = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            ip.tos,
            20 + len(inner),
            0,
            0,
            ip.ttl,
            ip.proto,
            0,
            ip.src,
            ip.dst,
        )
        return head[:10] + struct.pack("!H", checksum(head)) + head[12:] + inner
    word = (6 << 28) | (ip.tos << 20) | ip.flowlabel
    return struct.pack("!IHBB16s16s", word, len(inner), ip.proto, ip.ttl, ip.src, ip.dst) + inner


def _proto_of(header: Header, ip_version: int) -> int:
    if isinstance(header, IpHeader):
        return P.IPPROTO_IPIP if header.version == 4 else P.IPPROTO_IPV6
    if isinstance(header, GreHeader):
        return P.IPPROTO_GRE
    if isinstance(header, TcpHeader):
        return P.IPPROTO_TCP
    if isinstance(header, UdpHeader):
        return P.IPPROTO_UDP
    if isinstance(header, IcmpHeader):
        return P.IPPROTO_ICMPV6 if ip_version == 6 else P.IPPROTO_ICMP
    return 137  # MPLS-in-IP


def _ethertype_of(header: Header) -> int:
    if isinstance(header, IpHeader):
        return P.ETH_P_IP if header.version == 4 else P.ETH_P_IPV6
    return P.ETH_P_MPLS_UC
