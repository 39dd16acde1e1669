# SPDX-License-Identifier: GPL-2.0-only
"""Sniffing what the kernel sends on a device (docs/packetdrill-language.md §5.9), and the
run's pcap.

An ``AF_PACKET`` socket gives each outgoing packet with its kernel timestamp, which is what
timing checks use (not the time we got around to reading it). It works on any interface; the
device that owns it (:mod:`.device`) deals with the rest of its I/O.
"""

import select
import socket
import struct
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = 35
SO_RCVBUFFORCE = 33
_CMSG_SPACE = 64


class Sniffer:
    """Outbound packets of ``interface`` with kernel timestamps (seconds since the epoch)."""

    def __init__(self, interface: str) -> None:
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 2 * 1024 * 1024)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.bind((interface, ETH_P_ALL))
        self.sock.setblocking(False)
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.log: list[tuple[float, bytes]] = []

    def receive(self, timeout: float) -> tuple[float, bytes] | None:
        """Next outbound packet within ``timeout`` seconds (None on timeout)."""
        deadline = time.time() + timeout
        while True:
            packet = self._read_one()
            if packet is not None:
                return packet
            remaining = deadline - time.time()
            if remaining <= 0:
                return None
            self.poller.poll(max(1, int(remaining * 1000)))

    def _read_one(self) -> tuple[float, bytes] | None:
        while True:
            try:
                data, ancillary, _flags, address = self.sock.recvmsg(65536, _CMSG_SPACE)
            except BlockingIOError:
                return None
            if address[2] != PACKET_OUTGOING:
                continue
            stamp = time.time()
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", payload[:16])
                    stamp = sec + nsec / 1e9
            self.log.append((stamp, data))
            return stamp, data

    def flush(self) -> None:
        """Log everything still queued, so the pcap also holds unscripted packets."""
        while self._read_one() is not None:
            pass

    def close(self) -> None:
        self.sock.close()


def write_pcap(path: str, records: list[tuple[float, bytes]]) -> None:
    """Write raw-IP records (LINKTYPE_RAW) sorted by time."""
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
        for stamp, data in sorted(records, key=lambda record: record[0]):
            sec = int(stamp)
            out.write(struct.pack("<IIII", sec, int((stamp - sec) * 1e6), len(data), len(data)))
            out.write(data)
