# SPDX-License-Identifier: GPL-2.0-only
"""Packet capture with a real tcpdump inside a namespace, read back with scapy.

``with ns.capture("eth0", "tcp port 80") as cap:`` returns only once tcpdump reports that
it is listening, so no packet sent inside the block is missed; on exit it waits until the
pcap stops growing and then stops tcpdump by PID. ``cap.packets`` are scapy packets and
``cap.path`` the pcap, kept as a test artifact. Lists of packets come as
:class:`~.packet_lines.Packets`, whose repr is one tcpdump-like line per packet, so a failed
assertion about them reads like tcpdump, not like scapy's repr.

The pcap is read while tcpdump still writes it (``wait_for`` polls it every 20 ms), so each
packet is dissected once, when its record is complete: scapy dissection is the costly part
(most of all in a TCG guest), and re-reading the whole file per poll would make a wait cost
in proportion to everything captured before it.
"""

import io
import os
import select
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet
from scapy.utils import rdpcap

from netregress.errors import NetregressError
from netregress.process import Process
from netregress.spans import span

from . import artifacts
from .handle import Handle
from .packet_lines import Packets

_READY_TIMEOUT = 10.0
_SETTLE_POLL = 0.02
_FILE_HEADER = 24
_RECORD_HEADER = 16
# The pcap magic as written in either byte order, and the struct byte order it means
# (microsecond and nanosecond timestamps).
_BYTE_ORDER = {
    b"\xd4\xc3\xb2\xa1": "<",
    b"\x4d\x3c\xb2\xa1": "<",
    b"\xa1\xb2\xc3\xd4": ">",
    b"\xa1\xb2\x3c\x4d": ">",
}


class PcapTail:
    """The packets of a pcap file that may still be growing, each dissected once.

    Only whole records are handed to scapy: a record tcpdump has half written is left for
    the next read, so a packet is never dissected truncated. Why not scapy's own
    ``PcapReader`` on the open file: it has no notion of a record still being written (a
    short read at the end is an error or the end), so it cannot resume where it stopped.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._header = b""
        self._offset = 0
        self._packets: list[Packet] = []

    def read(self) -> Packets:
        """Every packet whose record is complete in the file now, in capture order."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return Packets()
        if not self._header:
            if len(data) < _FILE_HEADER:
                return Packets()
            self._header, data = data[:_FILE_HEADER], data[_FILE_HEADER:]
            self._offset = _FILE_HEADER
        whole = _whole_records(data, _byte_order(self._header, self.path))
        if whole:
            self._packets.extend(rdpcap(io.BytesIO(self._header + data[:whole])))
            self._offset += whole
        return Packets(self._packets)


def _byte_order(header: bytes, path: Path) -> str:
    try:
        return _BYTE_ORDER[header[:4]]
    except KeyError:
        raise NetregressError(f"{path} is not a pcap file (magic {header[:4].hex()})") from None


def _whole_records(data: bytes, order: str) -> int:
    """How many leading bytes of *data* are complete pcap records."""
    end = 0
    while end + _RECORD_HEADER <= len(data):
        (caplen,) = struct.unpack_from(order + "I", data, end + 8)
        if end + _RECORD_HEADER + caplen > len(data):
            break
        end += _RECORD_HEADER + caplen
    return end


class Capture:
    """A running (then finished) tcpdump on one interface of one namespace."""

    def __init__(
        self,
        ns: Handle,
        ifname: str,
        bpf_filter: str = "",
        path: Path | None = None,
        snaplen: int = 262144,
    ) -> None:
        self.ns = ns
        self.ifname = ifname
        self.bpf_filter = bpf_filter
        self.path = path or artifacts.new_path(f"{ns.label}-{ifname}", ".pcap")
        self.snaplen = snaplen
        self._proc: Process | None = None
        self._tail = PcapTail(self.path)
        self._packets: Packets | None = None

    # --- lifecycle ---------------------------------------------------------------------
    def start(self) -> "Capture":
        argv = [
            "tcpdump",
            "-i",
            self.ifname,
            "-n",
            "-U",
            "--immediate-mode",
            "-s",
            str(self.snaplen),
            "-w",
            str(self.path),
        ]
        if self.bpf_filter:
            argv.append(self.bpf_filter)
        with span("tcpdump-start"):
            self._proc = self.ns.spawn(argv)
            self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        """Block until tcpdump prints 'listening on', i.e. its socket is really attached."""
        assert self._proc is not None and self._proc.stderr is not None
        stderr = self._proc.stderr
        deadline = time.monotonic() + _READY_TIMEOUT
        seen = b""
        while b"listening on" not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stderr], [], [], left)[0]:
                self._proc.stop()
                raise NetregressError(
                    f"tcpdump on {self.ifname} in {self.ns.name} did not "
                    f"start within {_READY_TIMEOUT}s: {seen.decode()!r}"
                )
            chunk = os.read(stderr.fileno(), 4096)
            if not chunk:
                self._proc.stop()
                raise NetregressError(
                    f"tcpdump on {self.ifname} in {self.ns.name} failed: {seen.decode().strip()}"
                )
            seen += chunk

    def stop(self) -> None:
        """Let in-flight packets land in the pcap, then stop tcpdump."""
        if self._proc is None or not self._proc.running():
            return
        with span("tcpdump-stop"):
            self._settle()
            self._proc.stop()

    def _settle(self, quiet_polls: int = 3, limit: float = 2.0) -> None:
        """Wait until the pcap size has not changed for *quiet_polls* polls in a row."""
        last, quiet, deadline = -1, 0, time.monotonic() + limit
        while time.monotonic() < deadline:
            size = self.path.stat().st_size if self.path.exists() else 0
            quiet = quiet + 1 if size == last else 0
            if quiet >= quiet_polls:
                return
            last = size
            time.sleep(_SETTLE_POLL)

    def __repr__(self) -> str:
        """Where it listened, for pytest's explanation of ``cap.packets`` in an assertion."""
        on = f"{self.ifname} in {self.ns.name}"
        return f"<capture on {on}{f' ({self.bpf_filter})' if self.bpf_filter else ''}>"

    def __enter__(self) -> "Capture":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- results -----------------------------------------------------------------------
    def read(self) -> Packets:
        """Packets captured so far (the pcap is flushed per packet, so this works live)."""
        with span("pcap-parse"):
            return self._tail.read()

    @property
    def packets(self) -> Packets:
        if self._packets is None or (self._proc is not None and self._proc.running()):
            self._packets = self.read()
        return self._packets

    def wait_for(
        self, predicate: Callable[[Packet], bool], count: int = 1, timeout: float = 5.0
    ) -> Packets:
        """Wait until *count* captured packets satisfy *predicate*; returns them.

        Lets a case await an event on the wire instead of sleeping a guessed time.
        """
        deadline = time.monotonic() + timeout
        while True:
            hits = Packets(p for p in self.read() if predicate(p))
            if len(hits) >= count or time.monotonic() >= deadline:
                return hits
            time.sleep(_SETTLE_POLL)


# --- counting helpers ----------------------------------------------------------------------
def _ip(pkt: Packet) -> Packet | None:
    return pkt.getlayer(IP) or pkt.getlayer(IPv6)


def flow_of(pkt: Packet) -> tuple[str, int, str, int] | None:
    """(src, sport, dst, dport) of a TCP/UDP packet (innermost IP header), else None."""
    ip = _ip(pkt)
    l4 = pkt.getlayer(TCP) or pkt.getlayer(UDP)
    if ip is None or l4 is None:
        return None
    return (ip.src, int(l4.sport), ip.dst, int(l4.dport))


def _tcp_matching(
    pkts: Iterable[Packet], src: str | None, dst: str | None, sport: int | None, dport: int | None
) -> Iterable[Packet]:
    for pkt in pkts:
        flow = flow_of(pkt)
        if TCP not in pkt or flow is None:
            continue
        if (
            (src is None or flow[0] == src)
            and (sport is None or flow[1] == sport)
            and (dst is None or flow[2] == dst)
            and (dport is None or flow[3] == dport)
        ):
            yield pkt


def tcp_payload_len(pkt: Packet) -> int:
    """TCP payload bytes, from the IP length (robust against Ethernet padding)."""
    ip = _ip(pkt)
    tcp = pkt[TCP]
    if ip is None:
        return len(tcp.payload)
    if isinstance(ip, IPv6):
        return int(ip.plen) - int(tcp.dataofs) * 4
    return int(ip.len) - int(ip.ihl) * 4 - int(tcp.dataofs) * 4


def data_segments(
    pkts: Iterable[Packet],
    *,
    src: str | None = None,
    dst: str | None = None,
    sport: int | None = None,
    dport: int | None = None,
) -> Packets:
    """TCP segments carrying payload, optionally of one direction / flow."""
    return Packets(p for p in _tcp_matching(pkts, src, dst, sport, dport) if tcp_payload_len(p) > 0)


def pure_acks(
    pkts: Iterable[Packet],
    *,
    src: str | None = None,
    dst: str | None = None,
    sport: int | None = None,
    dport: int | None = None,
) -> Packets:
    """TCP segments that only acknowledge: ACK set, no payload, no SYN/FIN/RST."""
    return Packets(
        p
        for p in _tcp_matching(pkts, src, dst, sport, dport)
        if tcp_payload_len(p) == 0 and p[TCP].flags & 0x10 and not p[TCP].flags & 0x07
    )


def by_flow(pkts: Iterable[Packet]) -> Counter[tuple[str, int, str, int]]:
    """Packet count per (src, sport, dst, dport)."""
    return Counter(f for f in map(flow_of, pkts) if f is not None)
