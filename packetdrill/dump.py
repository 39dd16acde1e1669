# SPDX-License-Identifier: GPL-2.0-only
"""Short packet dumps in upstream's format (docs/packetdrill-language.md §11), used in error
reports and ``-v`` output.

Tools grep these lines (``script packet:``/``actual packet:``), so spacing is exact, including
the trailing space of a TCP dump without options.
"""

import ipaddress

from . import protocols as P
from .model import TcpOption
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
    IcmpHeader,
    IpHeader,
    MplsHeader,
    Packet,
    TcpHeader,
    UdpHeader,
)


def format_option(option: TcpOption) -> str:
    kind, values = option.kind, option.values
    if kind == P.TCPOPT_NOP:
        return "nop"
    if kind == P.TCPOPT_EOL:
        return "eol"
    if kind == P.TCPOPT_MSS:
        return f"mss {values[0]}"
    if kind == P.TCPOPT_WSCALE:
        return f"wscale {values[0]}"
    if kind == P.TCPOPT_SACK_PERM:
        return "sackOK"
    if kind == P.TCPOPT_SACK:
        return "sack " + " ".join(f"{values[i]}:{values[i + 1]}" for i in range(0, len(values), 2))
    if kind == P.TCPOPT_TS:
        return f"TS val {values[0]} ecr {values[1]}"
    if kind == P.TCPOPT_MD5:
        return f"md5 {option.data.hex()}"
    if kind in (P.TCPOPT_FO, P.TCPOPT_EXP):
        name = "FO" if kind == P.TCPOPT_FO else "FOEXP"
        return f"{name} {option.data.hex()}" if option.data else name
    if kind in (P.TCPOPT_ACCECN0, P.TCPOPT_ACCECN1):
        return "ECN " + " ".join(f"{n} {v}" for n, v in zip(option.ecn_names, values, strict=False))
    return f"kind {kind}"


def format_flags(flags: int, ace_mode: bool) -> str:
    text = "".join(
        ch
        for ch, bit in (("F", FIN), ("S", SYN), ("R", RST), ("P", PSH), (".", ACK), ("U", URG))
        if flags & bit
    )
    if ace_mode:
        ace = (1 if flags & ECE else 0) | (2 if flags & CWR else 0) | (4 if flags & AE else 0)
        return text + (str(ace) if ace else "")
    return text + "".join(ch for ch, bit in (("E", ECE), ("W", CWR), ("A", AE)) if flags & bit)


def _address(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


def _prefix(header: IpHeader | GreHeader | MplsHeader) -> str:
    if isinstance(header, IpHeader):
        return f"ipv{header.version} {_address(header.src)} > {_address(header.dst)}: "
    if isinstance(header, GreHeader):
        text = f"gre flags 0x{header.flags:x} proto 0x{header.proto:04x}"
        if header.flags & 0x8000:
            text += f" sum 0x{header.sum:x} off {header.off}"
        if header.flags & 0x2000:
            text += f" key 0x{header.key:x}"
        if header.flags & 0x1000:
            text += f" seq {header.seq}"
        return text + ": "
    return "".join(
        f"mpls (label {label}, tc {tc},{' [S],' if bottom else ''} ttl {ttl}): "
        for label, tc, bottom, ttl in header.entries
    )


def dump(
    packet: Packet, show_win: bool = True, ace_mode: bool = False, options_known: bool = True
) -> str:
    """One-line dump. ``show_win``/``options_known`` are False for script lines that left
    ``win`` or the options (``<...>``) unspecified."""
    headers = packet.headers
    inner_ip = max(i for i, h in enumerate(headers) if isinstance(h, IpHeader))
    text = "".join(
        _prefix(h)
        for h in headers[:inner_ip]
        if not isinstance(h, (TcpHeader, UdpHeader, IcmpHeader))
    )
    l4 = packet.l4
    if isinstance(l4, UdpHeader):
        return text + f"udp ({len(packet.payload)})"
    if isinstance(l4, IcmpHeader):
        return text + ("icmpv6" if packet.inner_ip.version == 6 else "icmpv4")
    assert isinstance(l4, TcpHeader)
    length = len(packet.payload)
    text += (
        f"{format_flags(l4.flags, ace_mode)} {l4.seq}:{(l4.seq + length) & 0xFFFFFFFF}({length}) "
    )
    if l4.flags & ACK:
        text += f"ack {l4.ack} "
    if show_win:
        text += f"win {l4.win} "
    if not options_known:
        return text + "<...>"
    if l4.options:
        text += "<" + ",".join(format_option(o) for o in l4.options) + ">"
    return text
