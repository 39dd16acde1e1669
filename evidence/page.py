# SPDX-License-Identifier: GPL-2.0-only
"""A failed test's evidence as an HTML fragment: links to its files and its TCP plots.

Why one module: the single-run report (pytest-html, :mod:`evidence.report_html`) and the kernel
matrix's drill-down (:mod:`kernels.report.html`) show the same evidence for a failure; both call
:func:`evidence_html` with the test's artifact folder.
"""

import html
import os
import re
from pathlib import Path

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


def evidence_html(folder: Path, message: str, link_from: Path) -> str:
    """Links (relative to the page's folder *link_from*, so the page opens from disk or a CI
    artifact) and plots; empty when the test left no evidence."""
    files = evidence_files(folder)
    if not files:
        return ""
    links = " ".join(
        f'<a href="{html.escape(Path(os.path.relpath(p, link_from)).as_posix())}">'
        f"{html.escape(p.name)}</a>"
        for p in files
    )
    figures = "".join(f'<div class="nr-plot">{svg}</div>' for svg in plots(folder, message))
    return f'<div class="nr-evidence"><p>evidence: {links}</p>{figures}</div>'
