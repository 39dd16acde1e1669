# SPDX-License-Identifier: GPL-2.0-only
"""The time-sequence plot keeps a burst readable: labels apart, a zoom on the failing line and
the first divergence, the legend outside the data; the same input draws the same SVG.

Structure, not pixels: the figure's artists (where matplotlib puts them) are checked, so a
font or a matplotlib release changes nothing here. The traces are built in memory: a 60-segment
burst in three milliseconds, then nothing for three seconds, the shape a stalled connection
leaves (C01) and the one that made the line labels a smear. The real traces are in
test_html_report.py.
"""

import itertools
from dataclasses import replace

import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from evidence import labels
from evidence.tcpplot import (
    Connection,
    Segment,
    connection_figure,
    first_divergence,
    plot_connection,
)
from packetdrill.timeline import ExpectedEvent, Timeline

KERNEL, PEER = ("192.168.0.1", 8080), ("192.0.2.1", 40000)
ISN, PEER_ISN = 7_000_000, 1_000
BURST, SIZE, SHORT_LINE = 60, 1000, 50  # the script's line 50 wants 500 bytes: the divergence


def _event(line: int, way: str, at: float, flags: str, seq: int, length: int, ack: int | None):
    return ExpectedEvent(
        line=line,
        kind="outbound packet" if way == ">" else "inbound packet",
        start=at,
        end=None,
        window_start=at - 0.004,
        window_end=at + 0.004,
        any_time=False,
        flags=flags,
        seq=seq,
        seq_end=seq + length,
        ack=ack,
    )


def burst(short_line: int | None = SHORT_LINE, pieces: int = 1) -> tuple[Connection, Timeline]:
    """The handshake, then BURST segments of SIZE bytes 50 us apart from 0.1 s and an ACK at
    3 s; the script expects the same, but 500 bytes on *short_line*. Each segment is sniffed
    in *pieces* (a GSO packet cut at the MSS)."""
    sent = {
        PEER: [
            Segment(0.01, PEER_ISN, 1, 0, "S", 0, []),
            Segment(0.1, PEER_ISN + 1, 0, 0, "A", ISN + 1, []),
            Segment(3.0, PEER_ISN + 1, 0, 0, "A", ISN + 1 + BURST * SIZE, []),
        ],
        KERNEL: [Segment(0.0101, ISN, 1, 0, "SA", PEER_ISN + 1, [])],
    }
    events = [
        _event(1, "<", 0.01, "S", 0, 0, None),
        _event(2, ">", 0.0101, "S.", 0, 0, 1),
        _event(3, "<", 0.1, ".", 1, 0, 1),
    ]
    piece = SIZE // pieces
    for index in range(BURST):
        at, seq, line = 0.1 + index * 5e-5, 1 + index * SIZE, 10 + 2 * index
        for part in range(pieces):
            flags = "PA" if part == pieces - 1 else "A"
            offset = ISN + seq + part * piece
            sent[KERNEL].append(
                Segment(at + part * 1e-6, offset, piece, piece, flags, PEER_ISN + 1, [])
            )
        length = SIZE // 2 if line == short_line else SIZE
        events.append(_event(line, ">", at, "P.", seq, length, 1))
    events.append(_event(99, "<", 3.0, ".", 1, 0, 1 + BURST * SIZE))
    return Connection(PEER, KERNEL, sent), Timeline("burst.pkt", 0.0, events)


def _texts(ax: Axes, prefix: str) -> list[Text]:
    return [t for t in ax.texts if str(t.get_gid() or "").startswith(prefix)]


def test_the_first_divergence_is_the_short_segment_and_gso_pieces_are_one_packet() -> None:
    conn, timeline = burst()
    found = first_divergence(conn, timeline, 0.0)
    assert found is not None and found.segment is not None
    assert found.event.line == SHORT_LINE
    assert found.what == "20001:20501(500) vs 20001:21001(1000)"
    conn, timeline = burst(short_line=None, pieces=3)  # 333+333+333: no divergence...
    assert first_divergence(conn, timeline, 0.0) is not None  # ...but 999 bytes, not 1000
    conn, timeline = burst(short_line=None, pieces=2)
    assert first_divergence(conn, timeline, 0.0) is None


def test_a_burst_gets_a_zoom_on_the_divergence_and_labels_that_cover_none() -> None:
    conn, timeline = burst()
    fig = connection_figure(conn, 0.0, "burst", timeline, failed_line=SHORT_LINE)
    main_ax, zoom_ax = fig.axes
    assert zoom_ax.get_gid() == "nr-zoom"
    (left, right), (low, high) = zoom_ax.get_xlim(), zoom_ax.get_ylim()
    failing = next(e for e in timeline.events if e.line == SHORT_LINE)
    assert left <= failing.window_start and failing.window_end <= right
    sniffed_at = 0.1 + (SHORT_LINE - 10) / 2 * 5e-5
    assert left <= sniffed_at <= right and low <= 20001 and 21001 <= high
    main_width = main_ax.get_xlim()[1] - main_ax.get_xlim()[0]
    assert (right - left) < main_width / 10, "the zoom magnifies the burst"

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax, prefix in ((main_ax, "nr-label-main-"), (zoom_ax, "nr-label-zoom-")):
        texts = _texts(ax, prefix)
        assert f"L{SHORT_LINE}" in [t.get_text() for t in texts], prefix
        boxes = [t.get_window_extent(renderer) for t in texts]
        for one, other in itertools.combinations(boxes, 2):
            assert not one.overlaps(other), prefix
    main_words = [t.get_text() for t in _texts(main_ax, "nr-label-main-")]
    assert any("–" in word for word in main_words), "a crowd of labels is abbreviated"
    covered = {SHORT_LINE}
    for word in main_words:
        first, _, last = word.removeprefix("L").partition("–")
        covered |= set(range(int(first), int(last or first) + 1))
    thinned = _texts(main_ax, "nr-thinned")
    unlabelled = thinned[0].get_text() if thinned else ""
    for event in timeline.events:
        if event.line not in covered and event.line != 1:  # line 1: the peer's SYN, no box
            assert f"L{event.line}" in unlabelled, event.line

    legend = fig.legends[0]
    assert legend.get_gid() == "nr-legend"
    assert f"expected (line {SHORT_LINE})" in [t.get_text() for t in legend.get_texts()]
    assert "first divergence (sniffed)" in [t.get_text() for t in legend.get_texts()]
    for ax in (main_ax, zoom_ax):
        assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent())


def test_no_failure_no_zoom_and_the_same_input_draws_the_same_svg() -> None:
    conn, timeline = burst(short_line=None)
    fig = connection_figure(conn, 0.0, "burst", timeline)
    assert len(fig.axes) == 1
    svg = plot_connection(conn, 0.0, "burst", timeline)
    assert svg == plot_connection(conn, 0.0, "burst", timeline)
    assert svg.startswith("<svg") and 'id="nr-legend"' in svg and 'id="nr-zoom"' not in svg
    conn, timeline = burst()
    svg = plot_connection(conn, 0.0, "burst", timeline, SHORT_LINE)
    assert 'id="nr-zoom"' in svg and svg == plot_connection(
        conn, 0.0, "burst", timeline, SHORT_LINE
    )


AREA = labels.Box(0, 0, 400, 200)


def test_labels_are_placed_merged_into_ranges_or_thinned_never_on_top_of_each_other() -> None:
    crowd = [labels.Anchor(line, 100 + line * 0.1, 100, strong=False) for line in range(10, 40, 2)]
    strong = labels.Anchor(24, 100 + 2.4, 100, strong=True)
    layout = labels.place([*crowd, strong], 9.0, AREA)
    for one, other in itertools.combinations([p.box for p in layout.placed], 2):
        assert not one.overlaps(other)
    assert all(p.box.inside(AREA) for p in layout.placed)
    assert [p.text for p in layout.placed if p.strong] == ["L24"]
    named = {line for p in layout.placed for line in p.lines} | set(layout.thinned)
    assert named == {a.line for a in crowd} | {24}
    assert any("–" in p.text for p in layout.placed)
    assert layout == labels.place([*crowd, strong], 9.0, AREA), "deterministic"


@pytest.mark.parametrize(
    "anchors, texts",
    [
        ([labels.Anchor(5, 10, 10), labels.Anchor(7, 200, 100)], ["L5", "L7"]),
        ([labels.Anchor(5, 10, 10), labels.Anchor(7, 10, 10)], ["L5", "L7"]),  # below/left
        ([labels.Anchor(line, 50, 50) for line in range(1, 9)], None),
    ],
)
def test_labels_with_room_keep_their_own_names(
    anchors: list[labels.Anchor], texts: list[str] | None
) -> None:
    layout = labels.place(anchors, 9.0, AREA)
    if texts is not None:
        assert sorted(p.text for p in layout.placed) == texts
    else:  # eight on one spot: six spots around it, so some share a label
        assert len(layout.placed) < len(anchors) and not layout.thinned


def test_the_zoom_names_a_relative_window_in_the_failure_messages_clock_too() -> None:
    """A timing error says ``+0.010~+0.020 sec``, counted from the instant the previous event
    was done; the plot counts from script time 0. The zoom says both, and its top axis reads
    the message's clock (the window is the script's range, before any tolerance)."""
    conn, timeline = burst()
    failing = next(e for e in timeline.events if e.line == SHORT_LINE)
    base = failing.start - 0.010
    relative = replace(failing, end=failing.start + 0.010, base=base)
    timeline = replace(timeline, events=[relative if e is failing else e for e in timeline.events])
    fig = connection_figure(conn, 0.0, "burst", timeline, failed_line=SHORT_LINE)
    _, zoom_ax = fig.axes
    title = zoom_ax.get_title()
    assert (
        f"line {SHORT_LINE}: +0.010~+0.020 s after {base:.4f} s = "
        f"{failing.start:.4f}~{failing.start + 0.010:.4f} s"
    ) in title
    (top,) = [ax for ax in zoom_ax.child_axes if ax.get_gid() == "nr-zoom-message-clock"]
    FigureCanvasAgg(fig).draw()
    assert top.get_xlim() == pytest.approx(tuple(x - base for x in zoom_ax.get_xlim()))
    assert "the failure message's clock" in top.get_xlabel()
