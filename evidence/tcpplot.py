# SPDX-License-Identifier: GPL-2.0-only
"""Time-sequence (Stevens) plots of the TCP connections in a pcap, as SVG text.

Why: a TCP engineer reads a retransmission storm, a stalled window or a late segment from the
picture in seconds, where the packet list takes minutes. The plot is the one tcptrace and
Wireshark draw: per connection, the data sender's segments as vertical bars (sequence range
against time, retransmissions in red), the receiver's cumulative ACK as a step line and its
SACK blocks as green bars. When the pcap comes from a packetdrill run, the script's expected
packets (:mod:`packetdrill.timeline`) are overlaid as boxes spanning their timing
windows, the failing line outlined, so a timing error is visible at a glance.

scapy reads the pcap, matplotlib (headless Agg backend, imported only when a plot is drawn)
writes the SVG.
"""

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet
from scapy.utils import PcapReader

from packetdrill.timeline import ExpectedEvent, Timeline, read_timeline

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_PACKETS = 20000  # a bulk-transfer capture is summarised by its first packets
MAX_CONNECTIONS = 3  # the plots a report shows per pcap

Endpoint = tuple[str, int]


@dataclass
class Segment:
    time: float
    seq: int  # raw (not yet relative) sequence number
    length: int  # payload + SYN/FIN, the sequence space the segment uses
    flags: str
    ack: int
    sacks: list[tuple[int, int]]


@dataclass
class Connection:
    """Both directions of one TCP connection; `first` is the endpoint that sent first."""

    first: Endpoint
    second: Endpoint
    sent: dict[Endpoint, list[Segment]] = field(default_factory=dict)

    def sender(self) -> Endpoint:
        """The direction carrying most data (the handshake's passive side on a tie)."""

        def volume(end: Endpoint) -> tuple[int, int]:
            return sum(s.length for s in self.sent.get(end, [])), end == self.second

        return max((self.first, self.second), key=volume)

    def peer(self, end: Endpoint) -> Endpoint:
        return self.second if end == self.first else self.first

    def base(self, end: Endpoint) -> int:
        """The sequence number that is 0 in the plot: the SYN's, else the first seen."""
        segments = self.sent.get(end, [])
        syn = next((s.seq for s in segments if "S" in s.flags), None)
        return syn if syn is not None else (segments[0].seq if segments else 0)


def _endpoints(packet: Packet) -> tuple[Endpoint, Endpoint] | None:
    ip = packet.getlayer(IP) or packet.getlayer(IPv6)
    tcp = packet.getlayer(TCP)
    if ip is None or tcp is None:
        return None
    return (str(ip.src), int(tcp.sport)), (str(ip.dst), int(tcp.dport))


def _segment(packet: Packet, time: float) -> Segment:
    tcp = packet[TCP]
    flags = str(tcp.flags)
    payload = len(bytes(tcp.payload))
    length = payload + ("S" in flags) + ("F" in flags)
    sacks: list[tuple[int, int]] = []
    for name, value in tcp.options:
        if name == "SAck" and isinstance(value, tuple):
            sacks += list(zip(value[::2], value[1::2], strict=False))
    return Segment(time, int(tcp.seq), length, flags, int(tcp.ack), sacks)


def read_connections(pcap: Path) -> list[Connection]:
    """The TCP connections in *pcap*, in order of their first packet."""
    connections: dict[frozenset[Endpoint], Connection] = {}
    with PcapReader(str(pcap)) as reader:
        for count, packet in enumerate(reader):
            if count >= MAX_PACKETS:
                break
            ends = _endpoints(packet)
            if ends is None:
                continue
            src, dst = ends
            conn = connections.setdefault(frozenset(ends), Connection(src, dst))
            conn.sent.setdefault(src, []).append(_segment(packet, float(packet.time)))
    return list(connections.values())


def _script_bases(events: list[ExpectedEvent]) -> dict[str, int]:
    """Per script direction ("<" / ">"), the sequence number its SYN (or first packet) uses:
    the same zero the plot gives the live packets (:meth:`Connection.base`)."""
    bases: dict[str, int] = {}
    for way in "<>":
        mine = [e for e in events if e.seq is not None and _way(e) == way]
        syn = next((e for e in mine if "S" in e.flags), mine[0] if mine else None)
        if syn is not None and syn.seq is not None:
            bases[way] = syn.seq
    return bases


def _way(event: ExpectedEvent) -> str:
    return ">" if event.kind.startswith("outbound") else "<"


def _overlay(
    ax: "Axes", conn: Connection, timeline: Timeline, failed_line: int | None, span: float
) -> None:
    """Boxes for the script's TCP packets: x = timing window, y = sequence range or ack."""
    from matplotlib.patches import Rectangle

    events = [e for e in timeline.events if e.seq is not None and not e.any_time]
    if not events:
        return
    first_packet = min((s for segs in conn.sent.values() for s in segs), key=lambda s: s.time)
    first_src = next(end for end, segs in conn.sent.items() if first_packet in segs)
    first_way = _way(events[0])
    sender = conn.sender()
    sender_way = first_way if sender == first_src else ("<" if first_way == ">" else ">")
    bases = _script_bases(events)
    height = max(span * 0.01, 1.0)
    for event in events:
        way = _way(event)
        if way == sender_way:
            assert event.seq is not None and event.seq_end is not None
            low: float = event.seq - bases[way]
            high = max(event.seq_end - bases[way], low + height)
        elif event.ack is not None:
            low = event.ack - bases.get(sender_way, 0) - height / 2
            high = low + height
        else:
            continue
        left, right = event.window_start, event.window_end
        failed = event.line == failed_line
        ax.add_patch(
            Rectangle(
                (left, low),
                max(right - left, 1e-4),
                high - low,
                facecolor="#ffb000" if failed else "#7fbf7f",
                alpha=0.35,
                edgecolor="#d00000" if failed else "#2f7f2f",
                linewidth=2 if failed else 0.8,
                label=f"expected (line {event.line})" if failed else None,
            )
        )
        ax.annotate(
            f"L{event.line}", (left, high), fontsize=6, color="#d00000" if failed else "#2f7f2f"
        )


def plot_connection(
    conn: Connection,
    origin: float,
    title: str,
    timeline: Timeline | None = None,
    failed_line: int | None = None,
) -> str:
    """One Stevens graph as SVG markup (no XML prologue, ready to inline in HTML)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    sender = conn.sender()
    receiver = conn.peer(sender)
    base = conn.base(sender)

    def offset(seq: int) -> int:
        """Sequence number relative to the sender's zero, across a 2^32 wrap."""
        return (seq - base) % 2**32

    fig = Figure(figsize=(8, 4.2), dpi=100)
    ax = fig.add_subplot()
    highest = 0
    fresh: list[list[tuple[float, int]]] = []
    again: list[list[tuple[float, int]]] = []
    marks: list[tuple[float, int]] = []
    for seg in conn.sent.get(sender, []):
        x, low = seg.time - origin, offset(seg.seq)
        if seg.length == 0:
            marks.append((x, low))
            continue
        bar = [(x, low), (x, low + seg.length)]
        (again if low < highest else fresh).append(bar)
        highest = max(highest, low + seg.length)
    ax.add_collection(LineCollection(fresh, colors="#1f4fbf", linewidths=1.6, label="data"))
    if again:
        ax.add_collection(
            LineCollection(again, colors="#d00000", linewidths=2.2, label="retransmission")
        )
    if marks:
        ax.plot(*zip(*marks, strict=True), "o", ms=3, color="#1f4fbf", label="SYN/FIN/empty")
    acks = [(s.time - origin, offset(s.ack)) for s in conn.sent.get(receiver, []) if "A" in s.flags]
    if acks:
        ax.step(*zip(*acks, strict=True), where="post", color="#7f7f7f", linewidth=1, label="ACK")
    sacks = [
        [(s.time - origin, offset(left)), (s.time - origin, offset(right))]
        for s in conn.sent.get(receiver, [])
        for left, right in s.sacks
    ]
    if sacks:
        ax.add_collection(LineCollection(sacks, colors="#2fa02f", linewidths=3, label="SACK"))
    ax.autoscale_view()
    if timeline is not None:
        bottom, top = ax.get_ylim()
        _overlay(ax, conn, timeline, failed_line, top - bottom)
        ax.autoscale_view()
    ax.set_xlabel("time (s)" + (" since script time 0" if timeline else ""))
    ax.set_ylabel(f"sequence offset ({sender[0]}:{sender[1]})")
    ax.set_title(title, fontsize=9)
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # real <text>: searchable, small
        fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg") :]


def plot_pcap(pcap: Path, failed_line: int | None = None) -> list[str]:
    """SVG plots for the first connections of *pcap*, with its script overlay if saved."""
    timeline = read_timeline(pcap)
    connections = read_connections(pcap)[:MAX_CONNECTIONS]
    if not connections:
        return []
    origin = (
        timeline.epoch
        if timeline
        else min(s.time for conn in connections for segs in conn.sent.values() for s in segs)
    )
    return [
        plot_connection(
            conn,
            origin,
            f"{pcap.name}: {conn.first[0]}:{conn.first[1]} ↔ {conn.second[0]}:{conn.second[1]}",
            timeline,
            failed_line,
        )
        for conn in connections
    ]
