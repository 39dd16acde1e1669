# SPDX-License-Identifier: GPL-2.0-only
"""Two packet traces of the same test, aligned, and where they first diverge.

Why: a regression hunt starts with "what did the failing kernel do differently?". Addresses,
ports and initial sequence numbers differ between any two runs, so packets are compared by
role (which side of which connection sent it) and relative numbers; difflib aligns the two
packet lists on what the TCP state machine decided (flags, sequence range, ack, length), and
the first divergence is the earliest aligned row that differs in those, in window or
options, or in timing (the gap since the previous packet differs by more than
:data:`TIMING_SLACK` and a quarter of itself - a report highlight, never a test oracle).
"""

import difflib
from dataclasses import dataclass
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.utils import PcapReader

MAX_PACKETS = 2000
TIMING_SLACK = 0.005  # seconds


@dataclass(frozen=True)
class Row:
    """One packet, run-independent: `who` is e.g. ``c0 A>B`` (connection 0, opener to peer)."""

    time: float  # since the trace's first packet
    gap: float  # since the previous packet
    who: str
    flags: str
    seq: int
    length: int
    ack: int
    win: int
    options: str

    def key(self) -> tuple[str, str, int, int, int]:
        return self.who, self.flags, self.seq, self.length, self.ack

    def text(self) -> str:
        ack = f" ack {self.ack}" if "A" in self.flags else ""
        return f"{self.flags} {self.seq}:{self.seq + self.length}({self.length}){ack}"


def read_rows(pcap: Path) -> list[Row]:
    """The pcap's TCP and UDP packets as :class:`Row` (others carry no state to compare)."""
    rows: list[Row] = []
    flows: dict[frozenset[tuple[str, int]], tuple[int, tuple[str, int]]] = {}
    bases: dict[tuple[str, int], int] = {}
    first = last = None
    with PcapReader(str(pcap)) as reader:
        for packet in reader:
            if len(rows) >= MAX_PACKETS:
                break
            ip = packet.getlayer(IP) or packet.getlayer(IPv6)
            l4 = packet.getlayer(TCP) or packet.getlayer(UDP)
            if ip is None or l4 is None:
                continue
            src, dst = (str(ip.src), int(l4.sport)), (str(ip.dst), int(l4.dport))
            index, opener = flows.setdefault(frozenset((src, dst)), (len(flows), src))
            who = f"c{index} {'A>B' if src == opener else 'B>A'}"
            stamp = float(packet.time)
            first = stamp if first is None else first
            gap = 0.0 if last is None else stamp - last
            last = stamp
            if isinstance(l4, TCP):
                base = bases.setdefault(src, int(l4.seq))
                peer = bases.get(dst, 0)
                flags = str(l4.flags)
                rows.append(
                    Row(
                        stamp - first,
                        gap,
                        who,
                        flags,
                        (int(l4.seq) - base) % 2**32,
                        len(bytes(l4.payload)),
                        (int(l4.ack) - peer) % 2**32 if "A" in flags else 0,
                        int(l4.window),
                        ",".join(str(name) for name, _ in l4.options),
                    )
                )
            else:
                rows.append(
                    Row(stamp - first, gap, who, "udp", 0, len(bytes(l4.payload)), 0, 0, "")
                )
    return rows


@dataclass(frozen=True)
class Pair:
    """An aligned row: either side may be missing; `fields` names what differs."""

    left: Row | None
    right: Row | None
    fields: tuple[str, ...]


def _differences(left: Row, right: Row) -> tuple[str, ...]:
    fields = [
        name
        for name in ("who", "flags", "seq", "length", "ack", "win", "options")
        if getattr(left, name) != getattr(right, name)
    ]
    slack = max(TIMING_SLACK, 0.25 * max(left.gap, right.gap))
    if abs(left.gap - right.gap) > slack:
        fields.append("timing")
    return tuple(fields)


def align(left: list[Row], right: list[Row]) -> list[Pair]:
    matcher = difflib.SequenceMatcher(
        None, [r.key() for r in left], [r.key() for r in right], autojunk=False
    )
    pairs: list[Pair] = []
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset in range(max(i2 - i1, j2 - j1)):
            a = left[i1 + offset] if i1 + offset < i2 else None
            b = right[j1 + offset] if j1 + offset < j2 else None
            if a is not None and b is not None:
                fields = _differences(a, b)
            else:
                fields = ("missing here",) if a is None else ("missing there",)
            pairs.append(Pair(a, b, fields))
    return pairs


def first_divergence(pairs: list[Pair]) -> int | None:
    return next((i for i, pair in enumerate(pairs) if pair.fields), None)


def describe(pairs: list[Pair], index: int | None, left_name: str, right_name: str) -> str:
    """One sentence: which packet, which field, what timing."""
    if index is None:
        return f"the traces on {left_name} and {right_name} do not diverge"
    pair = pairs[index]
    a, b = pair.left, pair.right
    if a is None or b is None:
        only, name = (a, left_name) if b is None else (b, right_name)
        assert only is not None
        return f"packet {index + 1}: only {name} sent {only.who} {only.text()} at {only.time:.6f} s"
    parts = [
        f"{field} {getattr(a, field)} vs {getattr(b, field)}"
        for field in pair.fields
        if field != "timing"
    ]
    if "timing" in pair.fields:
        parts.append(f"gap {a.gap * 1e3:.1f} ms vs {b.gap * 1e3:.1f} ms")
    return (
        f"packet {index + 1} ({a.who} {a.text()}): "
        + "; ".join(parts)
        + f" ({left_name} vs {right_name})"
    )
