# SPDX-License-Identifier: GPL-2.0-only
"""pcap → packetdrill skeleton: turn a capture of one TCP connection into a ``.pkt``.

A field bug arrives as a capture taken on the host whose kernel misbehaved. This writes
the script a kernel engineer would otherwise type by hand: the peer's packets become
inbound lines (``<``), the local kernel's become expected outbound lines (``>``), with
relative sequence numbers, options and timing, plus the system calls that can be inferred
(listen/accept or connect, writes sized from the data, reads, close). Where it has to
guess it says so in a ``// TODO`` comment; the result is a starting point to edit.

    python -m packetdrill.from_pcap capture.pcap [--local IP] [-o out.pkt]
"""

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scapy.error import Scapy_Exception
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet
from scapy.utils import rdpcap

from netregress.errors import run_cli

from .errors import PacketdrillError

_FLAG_ORDER = (
    ("F", 0x01),
    ("S", 0x02),
    ("R", 0x04),
    ("P", 0x08),
    (".", 0x10),
    ("U", 0x20),
    ("E", 0x40),
    ("W", 0x80),
)


class ConversionError(PacketdrillError):
    """The capture cannot be turned into a script (no TCP, no handshake, …)."""


@dataclass
class Segment:
    """One TCP segment of the connection, in script terms."""

    time: float
    outbound: bool
    flags: int
    seq: int
    ack: int
    length: int
    win: int
    options: list[tuple[str, object]]


@dataclass
class Connection:
    local: tuple[str, int]
    remote: tuple[str, int]
    passive: bool
    segments: list[Segment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _ip_layer(pkt: Packet) -> Packet | None:
    return pkt.getlayer(IP) or pkt.getlayer(IPv6)


def _payload_len(ip: Packet, tcp: Packet) -> int:
    if isinstance(ip, IPv6):
        return int(ip.plen) - int(tcp.dataofs) * 4
    return int(ip.len) - int(ip.ihl) * 4 - int(tcp.dataofs) * 4


def load(path: Path, local_ip: str | None = None) -> Connection:
    """The first TCP connection with a SYN in *path*, seen from the local side."""
    try:
        packets = rdpcap(str(path))
    except (OSError, Scapy_Exception) as exc:
        raise ConversionError(f"{path}: cannot read capture: {exc}") from exc
    tcp_packets = [(p, ip) for p in packets if TCP in p and (ip := _ip_layer(p)) is not None]
    syn = next(((p, ip) for p, ip in tcp_packets if p[TCP].flags & 0x12 == 0x02), None)
    if syn is None:
        raise ConversionError(
            f"{path}: no TCP SYN found: capture the connection from its "
            f"start (the handshake carries the ISNs and options)"
        )
    pkt, ip = syn
    client = (ip.src, int(pkt[TCP].sport))
    server = (ip.dst, int(pkt[TCP].dport))
    notes = []
    if local_ip is None:
        local, remote = server, client
        notes.append(f"local side guessed as the server {server[0]} (use --local to choose)")
    elif local_ip in (client[0], server[0]):
        local, remote = (client, server) if local_ip == client[0] else (server, client)
    else:
        raise ConversionError(
            f"{path}: --local {local_ip} is neither end of the first "
            f"connection ({client[0]} → {server[0]})"
        )
    conn = Connection(local, remote, passive=local == server, notes=notes)
    start = float(pkt.time)
    isn: dict[bool, int] = {}
    for p, ip in tcp_packets:
        tcp = p[TCP]
        ends = ((ip.src, int(tcp.sport)), (ip.dst, int(tcp.dport)))
        if ends not in ((local, remote), (remote, local)):
            continue
        outbound = ends[0] == local
        flags = int(tcp.flags)
        if flags & 0x02:
            isn[outbound] = int(tcp.seq)
        if outbound not in isn:
            continue  # data before the handshake: cannot be made relative
        peer_isn = isn.get(not outbound, 0)
        conn.segments.append(
            Segment(
                time=float(p.time) - start,
                outbound=outbound,
                flags=flags,
                seq=(int(tcp.seq) - isn[outbound]) % 2**32,
                ack=(int(tcp.ack) - peer_isn) % 2**32 if flags & 0x10 else 0,
                length=_payload_len(ip, tcp),
                win=int(tcp.window),
                options=list(tcp.options),
            )
        )
    return conn


def _flags(bits: int) -> str:
    text = "".join(letter for letter, bit in _FLAG_ORDER if bits & bit)
    return text or "-"


def _options(seg: Segment) -> tuple[str, list[str]]:
    """The ``<...>`` list and TODOs for options the language cannot express."""
    parts: list[str] = []
    todo: list[str] = []
    for name, value in seg.options:
        if name == "MSS":
            parts.append(f"mss {value}")
        elif name == "WScale":
            parts.append(f"wscale {value}")
        elif name == "SAckOK":
            parts.append("sackOK")
        elif name == "Timestamp" and isinstance(value, tuple):
            val, ecr = value
            parts.append(f"TS val {val} ecr {ecr}")
        elif name == "NOP":
            parts.append("nop")
        elif name == "EOL":
            parts.append("eol")
        elif name == "SAck" and isinstance(value, tuple):
            edges = list(value)
            todo.append("SACK blocks are absolute in the capture; made relative by hand")
            parts.append(
                "sack "
                + " ".join(f"{edges[i]}:{edges[i + 1]}" for i in range(0, len(edges) - 1, 2))
            )
        else:
            todo.append(f"option {name} has no packetdrill spelling here; left out")
    return (f" <{','.join(parts)}>" if parts else ""), todo


def _packet_line(seg: Segment) -> tuple[str, list[str]]:
    end = seg.seq + seg.length
    line = f"{'>' if seg.outbound else '<'} {_flags(seg.flags)} {seg.seq}:{end}({seg.length})"
    if seg.flags & 0x10:
        line += f" ack {seg.ack}"
    if not seg.outbound:
        line += f" win {seg.win}"  # required inbound; outbound windows depend on memory
    opts, todo = _options(seg)
    return line + opts, todo


def _time(delta: float) -> str:
    if delta < 0.0005:
        return "+0"
    return f"+{delta:.3f}".rstrip("0").replace("+0.", "+.")


def render(conn: Connection, source: str, init: str | None = None) -> str:
    """The script text for *conn*; *init* is an init command (e.g. the capture host's
    sysctl setup), since sysctls such as tcp_rmem shape options like wscale."""
    fd = 4 if conn.passive else 3
    lines = [
        f"// Generated by netregress pcap→pkt from {source}",
        f"// connection: local {conn.local[0]}:{conn.local[1]} "
        f"({'passive open' if conn.passive else 'active open'}) with peer "
        f"{conn.remote[0]}:{conn.remote[1]}",
        "// Outbound windows are not checked (they depend on the kernel's memory).",
        *(f"// TODO: {note}" for note in conn.notes),
    ]
    if init:
        lines.append(f"`{init}`")
    else:
        lines.append(
            "// TODO: add an init command that sets the capture host's TCP sysctls "
            "(tcp_rmem shapes wscale)"
        )
    if conn.passive:
        lines += [
            "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3",
            "+0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0",
            "+0 bind(3, ..., ...) = 0",
            "+0 listen(3, 1) = 0",
        ]
    else:
        lines += [
            "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3",
            "+0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0",
            "+0 connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)",
        ]
    now = 0.0
    established = False
    unread = 0
    writing = False
    closed = False
    for i, seg in enumerate(conn.segments):
        pre: list[str] = []
        if seg.outbound and seg.length and not writing:
            if unread:
                pre.append(f"read({fd}, ..., {unread}) = {unread}")
                unread = 0
            burst = 0
            for later in conn.segments[i:]:
                if not later.outbound:
                    break
                burst += later.length
            pre.append(
                f"write({fd}, ..., {burst}) = {burst}"
                "   // TODO: write sizes are guessed from back-to-back segments"
            )
            writing = True
        if seg.outbound and seg.flags & 0x01 and not closed:
            if unread:
                pre.append(f"read({fd}, ..., {unread}) = {unread}")
                unread = 0
            pre.append(f"close({fd}) = 0   // TODO: or shutdown(); inferred from our FIN")
            closed = True
        line, todo = _packet_line(seg)
        for k, call in enumerate(pre):
            lines.append(f"{_time(seg.time - now) if k == 0 else '+0'} {call}")
            now = seg.time if k == 0 else now
        lines += [f"// TODO: {t}" for t in todo]
        lines.append(f"{_time(seg.time - now)} {line}")
        now = seg.time
        if not seg.outbound:
            unread += seg.length
            writing = False
        if not established and seg.flags & 0x12 == 0x10:
            established = True
            if conn.passive:
                lines.append(f"+0 accept(3, ..., ...) = {fd}")
            else:
                lines.append("+0 fcntl(3, F_SETFL, O_RDWR) = 0")
    if unread and not closed:
        lines.append(f"+0 read({fd}, ..., {unread}) = {unread}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/pcap2pkt", description=__doc__.split("\n\n")[0])
    parser.add_argument("pcap", type=Path)
    parser.add_argument(
        "--local",
        help="IP of the host whose kernel is under test (default: the server of the connection)",
    )
    parser.add_argument("--init", help="init command for the script, e.g. ./defaults.sh")
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    args = parser.parse_args(argv)

    def body() -> int:
        text = render(load(args.pcap, args.local), args.pcap.name, args.init)
        if args.output:
            args.output.write_text(text)
        else:
            sys.stdout.write(text)
        return 0

    return run_cli("pcap2pkt", body, status=1)


if __name__ == "__main__":
    sys.exit(main())
