# SPDX-License-Identifier: GPL-2.0-only
"""Time-sequence (Stevens) plots of the TCP connections in a pcap, as SVG text.

Why: a TCP engineer reads a retransmission storm, a stalled window or a late segment from the
picture in seconds, where the packet list takes minutes. The plot is the one tcptrace and
Wireshark draw: per connection, the data sender's segments as vertical bars (sequence range
against time, retransmissions in red), the receiver's cumulative ACK as a step line and its
SACK blocks as green bars. When the pcap comes from a packetdrill run, the script's expected
packets (:mod:`packetdrill.timeline`) are overlaid as boxes spanning their timing
windows, the failing line outlined, so a timing error is visible at a glance.

A failure usually sits in a burst: a dozen segments within a millisecond of a plot that spans
seconds. So the first packet the kernel sent that the script did not expect (the first
divergence, the sniffed packet marked beside its expected box) and the failing line get a zoom
panel of their own, the line labels never cover each other (:mod:`evidence.labels`: placed,
merged into ranges, or thinned and listed), and the legend sits below the axes, outside the
data. The same pcap always gives the same SVG (no date, fixed ids), so tests compare the
figure's structure, not pixels.

scapy reads the pcap, matplotlib (headless Agg backend, imported only when a plot is drawn)
writes the SVG.
"""

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet
from scapy.utils import PcapReader

from packetdrill.timeline import ExpectedEvent, Timeline, read_timeline

from . import labels

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_PACKETS = 20000  # a bulk-transfer capture is summarised by its first packets
MAX_CONNECTIONS = 3  # the plots a report shows per pcap
GSO_INSTANT = 0.001  # seconds: the pieces of one GSO packet are captured within this

Endpoint = tuple[str, int]


@dataclass
class Segment:
    time: float
    seq: int  # raw (not yet relative) sequence number
    length: int  # payload + SYN/FIN, the sequence space the segment uses
    payload: int
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
    return Segment(time, int(tcp.seq), length, payload, flags, int(tcp.ack), sacks)


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


@dataclass(frozen=True)
class Box:
    """One script packet in the plot's numbers: its timing window (x) and sequence range or
    ack (y, relative to the sender's zero)."""

    event: ExpectedEvent
    left: float
    right: float
    low: float
    high: float
    failed: bool


@dataclass(frozen=True)
class Divergence:
    """The first packet the script expected from the kernel that the sniffed ones do not
    match, the sniffed packet in its place (None: nothing was sniffed there), and how."""

    event: ExpectedEvent
    segment: Segment | None
    what: str
    kernel: Endpoint  # the side the script's outbound packets come from


def _way(event: ExpectedEvent) -> str:
    return ">" if event.kind.startswith("outbound") else "<"


def _script_packets(timeline: Timeline) -> list[ExpectedEvent]:
    return [e for e in timeline.events if e.seq is not None]


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


def _ends_by_way(conn: Connection, events: list[ExpectedEvent]) -> dict[str, Endpoint]:
    """Which endpoint each script direction is: the first packet on the wire is the script's
    first packet."""
    first_packet = min((s for segs in conn.sent.values() for s in segs), key=lambda s: s.time)
    first_src = next(end for end, segs in conn.sent.items() if first_packet in segs)
    first_way = _way(events[0])
    other_way = "<" if first_way == ">" else ">"
    return {first_way: first_src, other_way: conn.peer(first_src)}


def script_boxes(
    conn: Connection, timeline: Timeline, failed_line: int | None, span: float
) -> list[Box]:
    """Boxes for the script's TCP packets with a time: the sender's as their sequence range,
    the receiver's as a thin band at their ack."""
    events = [e for e in _script_packets(timeline) if not e.any_time]
    if not events:
        return []
    sender_way = next(
        way for way, end in _ends_by_way(conn, events).items() if end == conn.sender()
    )
    bases = _script_bases(events)
    height = max(span * 0.01, 1.0)
    boxes: list[Box] = []
    for event in events:
        assert event.seq is not None and event.seq_end is not None
        if _way(event) == sender_way:
            low: float = event.seq - bases[sender_way]
            high = max(event.seq_end - bases[sender_way], low + height)
        elif event.ack is not None:
            low = event.ack - bases.get(sender_way, 0) - height / 2
            high = low + height
        else:
            continue
        right = max(event.window_end, event.window_start + 1e-4)
        boxes.append(Box(event, event.window_start, right, low, high, event.line == failed_line))
    return boxes


def _flag_set(flags: str) -> set[str]:
    """Script flags (``P.``, ``S.``, ``W`` for CWR) and scapy's (``PA``, ``C``) alike."""
    return set(flags.replace(".", "A").replace("W", "C"))


def _as_sent(sniffed: list[Segment], start: int, end: int, base: int) -> tuple[Segment, int]:
    """The packet the kernel handed to the device, from the sniffed segments from *start*:
    a GSO packet reaches the capture cut to the MSS, so contiguous segments of the same instant
    and ack are joined while they stay short of the script's *end* (relative numbers). Returns
    the joined segment and how many sniffed ones it took."""
    first = joined = sniffed[start]
    used = 1
    while start + used < len(sniffed):
        nxt = sniffed[start + used]
        reached = (joined.seq - base) % 2**32 + joined.payload
        contiguous = (nxt.seq - base) % 2**32 == reached and nxt.ack == first.ack
        if not (contiguous and reached < end and nxt.time - first.time < GSO_INSTANT):
            break
        flags = "".join(sorted(set(joined.flags) | set(nxt.flags)))
        payload = joined.payload + nxt.payload
        joined = Segment(first.time, first.seq, payload, payload, flags, first.ack, [])
        used += 1
    return joined, used


def first_divergence(conn: Connection, timeline: Timeline, origin: float) -> Divergence | None:
    """The script's outbound packets against what the kernel sent, in order (packetdrill
    accepts no packet the script does not name, so the n-th of each must agree): the first
    that differs in flags, sequence range, ack or timing window."""
    events = _script_packets(timeline)
    if not events or not conn.sent:
        return None
    ends = _ends_by_way(conn, events)
    bases = _script_bases(events)
    kernel = ends[">"]
    base = conn.base(kernel)
    sniffed = sorted(conn.sent.get(kernel, []), key=lambda s: s.time)
    taken = 0
    for event in (e for e in events if _way(e) == ">"):
        assert event.seq is not None and event.seq_end is not None
        if taken >= len(sniffed):
            return Divergence(event, None, "not sniffed", kernel)
        want, length = event.seq - bases[">"], event.seq_end - event.seq
        seg, used = _as_sent(sniffed, taken, want + length, base)
        taken += used
        seq = (seg.seq - base) % 2**32
        what = []
        if _flag_set(event.flags) != _flag_set(seg.flags):
            what.append(f"flags {event.flags} vs {seg.flags}")
        if (want, length) != (seq, seg.payload):
            what.append(f"{_range(want, length)} vs {_range(seq, seg.payload)}")
        if event.ack is not None and "<" in bases:
            ack = (seg.ack - conn.base(ends["<"])) % 2**32
            if ack != event.ack - bases["<"]:
                what.append(f"ack {event.ack - bases['<']} vs {ack}")
        at = seg.time - origin
        if not event.any_time and not event.window_start <= at <= event.window_end:
            what.append(
                f"sniffed at {at:.4f} s, window {event.window_start:.4f}~{event.window_end:.4f} s"
            )
        if what:
            return Divergence(event, seg, "; ".join(what), kernel)
    return None


def _range(seq: int, length: int) -> str:
    return f"{seq}:{seq + length}({length})"


@dataclass
class _Picture:
    """What one connection's plot shows, in the plot's numbers (time since *origin*, sequence
    offsets from the sender's zero), drawn once on the whole plot and once on the zoom."""

    sender: str
    fresh: list[list[tuple[float, float]]]
    again: list[list[tuple[float, float]]]
    marks: list[tuple[float, float]]
    acks: list[tuple[float, float]]
    sacks: list[list[tuple[float, float]]]
    boxes: list[Box] = field(default_factory=list)
    divergence: Divergence | None = None
    spot: tuple[float, float, float] | None = None  # the divergent packet: time, low, high

    def draw(self, ax: "Axes") -> None:
        from matplotlib.collections import LineCollection
        from matplotlib.patches import Rectangle

        ax.add_collection(LineCollection(self.fresh, colors=DATA, linewidths=1.6, label="data"))
        if self.again:
            ax.add_collection(
                LineCollection(self.again, colors=RED, linewidths=2.2, label="retransmission")
            )
        if self.marks:
            ax.plot(*zip(*self.marks, strict=True), "o", ms=3, color=DATA, label="SYN/FIN/empty")
        if self.acks:
            ax.step(*zip(*self.acks, strict=True), where="post", color=GREY, lw=1, label="ACK")
        if self.sacks:
            ax.add_collection(LineCollection(self.sacks, colors=GREEN, linewidths=3, label="SACK"))
        for box in self.boxes:
            ax.add_patch(
                Rectangle(
                    (box.left, box.low),
                    box.right - box.left,
                    box.high - box.low,
                    facecolor="#ffb000" if box.failed else "#7fbf7f",
                    alpha=0.35,
                    edgecolor=RED if box.failed else "#2f7f2f",
                    linewidth=2 if box.failed else 0.8,
                    label=f"expected (line {box.event.line})" if box.failed else "expected",
                )
            )
        if self.spot is not None:
            time, low, high = self.spot
            ax.plot(
                [time, time],
                [low, high],
                color=MAGENTA,
                lw=3.5,
                solid_capstyle="butt",
                label="first divergence (sniffed)",
            )

    def focus(self) -> tuple[float, float, float, float] | None:
        """The window around the failing line and the first divergence: left, right, low,
        high (padded), or None when there is neither."""
        xs: list[float] = []
        ys: list[float] = []
        for box in self.boxes:
            if box.failed or (self.divergence and box.event is self.divergence.event):
                xs += [box.left, box.right]
                ys += [box.low, box.high]
        if self.spot is not None:
            xs.append(self.spot[0])
            ys += [self.spot[1], self.spot[2]]
        if not xs:
            return None
        width, height = max(xs) - min(xs), max(ys) - min(ys)
        pad_x, pad_y = max(width * 0.6, 1e-3), max(height * 0.6, 500.0)
        return min(xs) - pad_x, max(xs) + pad_x, min(ys) - pad_y, max(ys) + pad_y


DATA, RED, GREEN, GREY, MAGENTA = "#1f4fbf", "#d00000", "#2fa02f", "#7f7f7f", "#c000c0"
LABEL_POINTS = 6.5
DPI = 100
ZOOM_AREA = 0.25  # a zoom panel when the focus covers less than this share of the plot


def _picture(conn: Connection, origin: float) -> _Picture:
    sender = conn.sender()
    receiver = conn.peer(sender)
    base = conn.base(sender)

    def offset(seq: int) -> int:
        """Sequence number relative to the sender's zero, across a 2^32 wrap."""
        return (seq - base) % 2**32

    picture = _Picture(f"{sender[0]}:{sender[1]}", [], [], [], [], [])
    highest = 0
    for seg in conn.sent.get(sender, []):
        x, low = seg.time - origin, offset(seg.seq)
        if seg.length == 0:
            picture.marks.append((x, low))
            continue
        bar = [(x, float(low)), (x, float(low + seg.length))]
        (picture.again if low < highest else picture.fresh).append(bar)
        highest = max(highest, low + seg.length)
    from_receiver = conn.sent.get(receiver, [])
    picture.acks = [(s.time - origin, offset(s.ack)) for s in from_receiver if "A" in s.flags]
    picture.sacks = [
        [(s.time - origin, offset(left)), (s.time - origin, offset(right))]
        for s in from_receiver
        for left, right in s.sacks
    ]
    return picture


def _label(ax: "Axes", boxes: list[Box], prefix: str) -> list[int]:
    """Line labels at the boxes in view that cover no other label (:mod:`evidence.labels`);
    returns the lines thinned out. Needs the figure's final layout (pixel positions)."""
    to_pixels = ax.transData.transform
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    anchors = []
    for box in boxes:
        # at the box's top left corner, or its bottom left one when only that is in view
        y = next((y for y in (box.high, box.low) if y0 <= y <= y1), None)
        if y is not None and x0 <= box.left <= x1:
            px, py = to_pixels((box.left, y))
            anchors.append(labels.Anchor(box.event.line, float(px), float(py), box.failed))
    extent = ax.bbox
    area = labels.Box(extent.x0, extent.y0, extent.width, extent.height)
    layout = labels.place(anchors, LABEL_POINTS * DPI / 72, area)
    to_data = ax.transData.inverted().transform
    for index, placed in enumerate(layout.placed):
        x, y = to_data((placed.box.left, placed.box.bottom))
        text = ax.text(
            x,
            y,
            placed.text,
            fontsize=LABEL_POINTS,
            color=RED if placed.strong else "#2f7f2f",
            fontweight="bold" if placed.strong else "normal",
            ha="left",
            va="bottom",
            gid=f"nr-label-{prefix}{index}",
            bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 0.4},
        )
        text.set_in_layout(False)
    return layout.thinned


def connection_figure(
    conn: Connection,
    origin: float,
    title: str,
    timeline: Timeline | None = None,
    failed_line: int | None = None,
) -> "Figure":
    """One Stevens graph: the whole connection, and beside it a zoom on the failing line and
    the first divergence when they are a small part of it; the legend below both, outside
    the data."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    picture = _picture(conn, origin)
    if timeline is not None:
        _, (bottom, top) = _limits(picture)
        picture.boxes = script_boxes(conn, timeline, failed_line, top - bottom)
        picture.divergence = first_divergence(conn, timeline, origin)
        found = picture.divergence
        if found is not None and found.segment is not None:
            picture.spot = _spot(conn, found, found.segment, origin, (top - bottom) * 0.01)
    window = _zoom_window(picture, _limits(picture))
    fig = Figure(figsize=(11, 4.8) if window else (8, 4.6), dpi=DPI, layout="constrained")
    grid = fig.add_gridspec(1, 2 if window else 1, width_ratios=[3, 2] if window else None)
    main_ax = fig.add_subplot(grid[0])
    picture.draw(main_ax)
    main_ax.autoscale_view()
    _style(main_ax, picture)
    main_ax.set_title(title, fontsize=9)
    zoom_ax = None
    if window is not None:
        zoom_ax = fig.add_subplot(grid[1], gid="nr-zoom")
        _zoom(main_ax, zoom_ax, picture, window)
        zoom_ax.set_title(_zoom_title(picture, failed_line), fontsize=7.5)
        _message_clock(zoom_ax, picture)
    handles, names = main_ax.get_legend_handles_labels()
    unique = dict(zip(names, handles, strict=True))
    fig.legend(
        list(unique.values()),
        list(unique.keys()),
        loc="outside lower center",
        ncols=min(len(unique), 7),
        fontsize=7,
        frameon=False,
    ).set_gid("nr-legend")
    fig.draw_without_rendering()  # the final layout, so that labels can be placed in pixels
    fig.set_layout_engine("none")
    thinned = _label(main_ax, picture.boxes, "main-")
    if zoom_ax is not None:
        _label(zoom_ax, picture.boxes, "zoom-")
    if thinned:
        where = "see the zoom" if zoom_ax is not None else "their labels would overlap"
        main_ax.text(
            0.99,
            0.01,
            f"unlabelled: {', '.join(f'L{line}' for line in thinned)} ({where})",
            transform=main_ax.transAxes,
            fontsize=6,
            ha="right",
            va="bottom",
            color=GREY,
            gid="nr-thinned",
        )
    return fig


def _spot(
    conn: Connection, found: Divergence, seg: Segment, origin: float, height: float
) -> tuple[float, float, float]:
    """Where the divergent sniffed packet is drawn: its sequence range when the kernel is the
    data sender, else (the kernel acknowledges the script's data) a band at its ack."""
    sender = conn.sender()
    if found.kernel == sender:
        low = (seg.seq - conn.base(sender)) % 2**32
        return seg.time - origin, low, low + max(seg.length, 1)
    ack = (seg.ack - conn.base(sender)) % 2**32
    return seg.time - origin, ack - height / 2, ack + height / 2


Limits = tuple[tuple[float, float], tuple[float, float]]


def _limits(picture: _Picture) -> Limits:
    """The x and y limits matplotlib gives the whole picture (on a throw-away figure)."""
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    picture.draw(ax)
    ax.autoscale_view()
    return ax.get_xlim(), ax.get_ylim()


def _zoom_window(picture: _Picture, limits: Limits) -> tuple[float, float, float, float] | None:
    """The focus (left, right, low, high) inside the plot's limits, when it is small enough
    there for a zoom to show more than the whole plot does."""
    focus = picture.focus()
    if focus is None:
        return None
    (x0, x1), (y0, y1) = limits
    left, right = max(focus[0], x0), min(focus[1], x1)
    low, high = max(focus[2], y0), min(focus[3], y1)
    share = (right - left) / (x1 - x0) * (high - low) / (y1 - y0)
    return (left, right, low, high) if share < ZOOM_AREA else None


def _zoom(
    main_ax: "Axes",
    zoom_ax: "Axes",
    picture: _Picture,
    window: tuple[float, float, float, float],
) -> None:
    """The picture again in *window*, and the window's frame on the whole plot."""
    from matplotlib.patches import Rectangle

    left, right, low, high = window
    picture.draw(zoom_ax)
    zoom_ax.set_xlim(left, right)
    zoom_ax.set_ylim(low, high)
    _style(zoom_ax, picture)
    main_ax.add_patch(
        Rectangle(
            (left, low),
            right - left,
            high - low,
            fill=False,
            edgecolor="#404040",
            linestyle="--",
            linewidth=0.9,
            gid="nr-zoom-frame",
        )
    )


def _style(ax: "Axes", picture: _Picture) -> None:
    ax.set_xlabel("time (s)" + (" since script time 0" if picture.boxes else ""), fontsize=8)
    ax.set_ylabel(f"sequence offset ({picture.sender})", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, linewidth=0.3)


def _zoom_title(picture: _Picture, failed_line: int | None) -> str:
    found = picture.divergence
    title = (
        f"zoom: line {failed_line}"
        if found is None
        else f"zoom: first divergence, line {found.event.line}: {found.what}"
    )
    event = _zoomed_event(picture)
    return title if event is None else f"{title}\n{message_clock(event)}"


def _zoomed_event(picture: _Picture) -> ExpectedEvent | None:
    """The script event the zoom is about, when its time is relative (``+0.01``): the first
    divergence's, else the failing line's."""
    if picture.divergence is not None:
        event: ExpectedEvent | None = picture.divergence.event
    else:
        event = next((box.event for box in picture.boxes if box.failed), None)
    return event if event is not None and event.base is not None else None


def message_clock(event: ExpectedEvent) -> str:
    """A relative event's script range in both clocks: the failure message's (``+0.010~+0.020 s``
    after the instant it counts from) and the plot's (seconds since script time 0)."""
    assert event.base is not None
    end = event.start if event.end is None else event.end
    since = f"+{event.start - event.base:.3f}"
    at = f"{event.start:.4f}"
    if end != event.start:
        since += f"~+{end - event.base:.3f}"
        at += f"~{end:.4f}"
    return f"line {event.line}: {since} s after {event.base:.4f} s = {at} s"


def _message_clock(zoom_ax: "Axes", picture: _Picture) -> None:
    """The zoom's top axis in the failure message's clock: seconds after the instant the zoomed
    event's relative time counts from, so ``+0.010~+0.020`` can be read off the picture."""
    event = _zoomed_event(picture)
    if event is None or event.base is None:
        return
    base = event.base

    def to_message(x: Any) -> Any:  # matplotlib hands numbers or numpy arrays
        return x - base

    def from_message(x: Any) -> Any:
        return x + base

    top = zoom_ax.secondary_xaxis("top", functions=(to_message, from_message))
    top.set_xlabel(f"s after {base:.4f} s (the failure message's clock)", fontsize=7)
    top.tick_params(labelsize=6.5)
    top.set_gid("nr-zoom-message-clock")


def plot_connection(
    conn: Connection,
    origin: float,
    title: str,
    timeline: Timeline | None = None,
    failed_line: int | None = None,
) -> str:
    """One Stevens graph as SVG markup (no XML prologue, ready to inline in HTML); the same
    input gives the same bytes (no date, fixed id salt)."""
    import matplotlib

    fig = connection_figure(conn, origin, title, timeline, failed_line)
    out = io.StringIO()
    # real <text> (searchable, small) and ids that do not change from run to run
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "netregress"}):
        fig.savefig(out, format="svg", metadata={"Date": None})
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
