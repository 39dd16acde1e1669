# SPDX-License-Identifier: GPL-2.0-only
"""A failed test's evidence as an HTML fragment: links to its files, the counters that moved,
its packets a tcpdump-like line each, and its TCP plots.

Why one module: the single-run report (pytest-html, :mod:`evidence.report_html`) and the kernel
matrix's drill-down (:mod:`kernels.report.html`) show the same evidence for a failure; both call
:func:`evidence_html` with the test's artifact folder. Why the counters and packets in words: a
reader should not have to download a pcap and a JSON file to learn that ``UdpNoPorts`` moved
by 20 or which packets crossed the wire; a plot shows TCP only.
"""

import html
import os
import re
from pathlib import Path

from scapy.config import conf
from scapy.packet import Packet
from scapy.utils import RawPcapReader

from netns.counters import SNAPSHOT_SUFFIX, moved_in
from netns.packet_lines import line, listing
from packetdrill.timeline import SUFFIX as TIMELINE_SUFFIX
from packetdrill.timeline import read_timeline

from .tcpplot import plot_pcap

MAX_PLOTTED_PCAPS = 4


def failed_script_line(pcap: Path, message: str) -> int | None:
    """The script line a packetdrill failure names (``script.pkt:24: ...``), if any. By the
    script's file name: the failure names it relative to where pytest was started, the
    timeline by the path the engine was given."""
    timeline = read_timeline(pcap)
    if timeline is None:
        return None
    name = re.escape(Path(timeline.script).name)
    found = re.search(rf"(?:^|/){name}:(\d+):", message, re.MULTILINE)
    return int(found.group(1)) if found else None


def evidence_files(folder: Path) -> list[Path]:
    """The files a reader opens (pcaps, counter snapshots), not our plot inputs."""
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir() if p.is_file() and not p.name.endswith(TIMELINE_SUFFIX)
    )


def plots(folder: Path, message: str) -> list[str]:
    """Inline SVG plots of the folder's pcaps (unreadable pcaps are named, not fatal)."""
    out: list[str] = []
    for pcap in [p for p in evidence_files(folder) if p.suffix == ".pcap"][:MAX_PLOTTED_PCAPS]:
        try:
            out += plot_pcap(pcap, failed_script_line(pcap, message))
        except Exception as exc:  # a truncated pcap must not lose the report
            out.append(f"<p>cannot plot {html.escape(pcap.name)}: {html.escape(str(exc))}</p>")
    return out


def counters(snapshot: Path) -> list[str]:
    """The counters a snapshot file says moved, a line each (``UdpNoPorts  +20``)."""
    moved = moved_in(snapshot)
    width = max(map(len, moved), default=0)
    return [f"{name:<{width}}  {delta:+d}" for name, delta in moved.items()]


def packet_lines(pcap: Path) -> list[str]:
    """The pcap's packets a line each (:func:`netns.packet_lines.listing`, bounded), with the
    seconds since its first packet (tcpdump's ``-ttttt``). Only the packets shown
    are dissected: the rest are counted."""
    with RawPcapReader(str(pcap)) as reader:
        layer = conf.l2types.num2layer.get(reader.linktype, conf.raw_layer)
        records = [(data, meta.sec + meta.usec / 1e6) for data, meta in reader]
    if not records:
        return []
    first = records[0][1]

    def show(record: tuple[bytes, float]) -> str:
        packet: Packet = layer(record[0])
        return f"{record[1] - first:.6f} {line(packet)}"

    return listing(records, show)


def _block(kind: str, what: str, lines: list[str]) -> str:
    """``counters that moved in 02-b-nstat.json`` and its lines, or ``no counters moved in …``."""
    if not lines:
        return f'<p class="nr-{kind}">no {html.escape(what)}</p>'
    return (
        f'<div class="nr-{kind}"><p>{html.escape(what)}:</p>'
        f"<pre>{html.escape(chr(10).join(lines))}</pre></div>"
    )


def in_words(files: list[Path]) -> str:
    """The counters that moved and the packets, of every snapshot and pcap among *files*
    (unreadable pcaps are named, not fatal)."""
    out = [
        _block("counters", f"counters moved in {p.name}", counters(p))
        for p in files
        if p.name.endswith(SNAPSHOT_SUFFIX)
    ]
    for pcap in [p for p in files if p.suffix == ".pcap"][:MAX_PLOTTED_PCAPS]:
        try:
            out.append(_block("packets", f"packets in {pcap.name}", packet_lines(pcap)))
        except Exception as exc:  # a truncated pcap must not lose the report
            out.append(f"<p>cannot read {html.escape(pcap.name)}: {html.escape(str(exc))}</p>")
    return "".join(out)


def evidence_html(folder: Path, message: str, link_from: Path) -> str:
    """Links (relative to the page's folder *link_from*, so the page opens from disk or a CI
    artifact), the counters and packets in words, and plots; empty when the test left no
    evidence."""
    files = evidence_files(folder)
    if not files:
        return ""
    links = " ".join(
        f'<a href="{html.escape(Path(os.path.relpath(p, link_from)).as_posix())}">'
        f"{html.escape(p.name)}</a>"
        for p in files
    )
    figures = "".join(f'<div class="nr-plot">{svg}</div>' for svg in plots(folder, message))
    return f'<div class="nr-evidence"><p>evidence: {links}</p>{in_words(files)}{figures}</div>'
