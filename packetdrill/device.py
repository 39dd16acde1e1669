# SPDX-License-Identifier: GPL-2.0-only
"""The device seam: the one way the runtime puts packets into the kernel and sees its replies.

Upstream packetdrill keeps its packet I/O behind a small table of operations (send, receive,
free), so that a tun device and a real NIC are interchangeable under the same event loop. This
is that seam for our engine: :class:`Device` is all the runtime knows, ``tun0``
(:class:`TunDevice`) implements it today, and another way in (a veth pair with a packet
socket, say) can be added beside it without touching the runtime.

Timing depends on two instants, and the seam hands both back unchanged: :meth:`Device.inject`
returns the wall-clock time taken just before the write (the kernel answers *inside* the
write, so a reply must never look older than its cause), and :meth:`Device.receive` the
kernel's own timestamp of a sniffed packet (not the time we got around to reading it).
"""

import os
import struct
import time
from dataclasses import dataclass
from typing import Protocol

from .netenv import TUN_NAME, VNET_HDR_LEN
from .sniffer import Sniffer

Stamped = tuple[float, bytes]  # (seconds since the epoch, a raw IP packet)

# struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset.
_VNET_HDR = struct.Struct("=BBHHHH")
_GSO_TCPV4, _GSO_TCPV6 = 1, 4


@dataclass(frozen=True)
class Offload:
    """Ask the device to cut an injected TCP packet into ``mss``-sized segments (GSO), as a
    NIC's receive offload would hand a large packet to the stack (``--mss``)."""

    mss: int
    ipv6: bool


class Device(Protocol):
    """Where the kernel under test meets the script's remote side."""

    def inject(self, raw: bytes, offload: Offload | None) -> float:
        """Hand ``raw`` (an IP packet) to the kernel as received from the remote side; the
        wall-clock time just before it went in. Raises :class:`OSError` if it cannot."""
        ...

    def receive(self, timeout: float) -> Stamped | None:
        """The next packet the kernel sends within ``timeout`` seconds, with its kernel
        timestamp; None if none came."""
        ...

    def flush(self) -> None:
        """Take in whatever the kernel has sent but nobody received, for :meth:`packets`."""
        ...

    def packets(self) -> list[Stamped]:
        """Every packet injected or received so far (the run's pcap)."""
        ...

    def close(self) -> None: ...


class TunDevice:
    """``tun0`` (opened by :func:`.netenv.open_tun`, virtio header on): packets go in by
    writing the tun fd; what the kernel sends is read with its timestamp from an
    ``AF_PACKET`` socket on the device, and the fd's own copy is drained and dropped so the
    device queue never fills."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.sniffer = Sniffer(TUN_NAME)
        self.injected: list[Stamped] = []

    def inject(self, raw: bytes, offload: Offload | None) -> float:
        header = (
            bytes(VNET_HDR_LEN)
            if offload is None
            else _VNET_HDR.pack(0, _GSO_TCPV6 if offload.ipv6 else _GSO_TCPV4, 0, offload.mss, 0, 0)
        )
        stamp = time.time()
        os.write(self.fd, header + raw)
        self.injected.append((stamp, raw))
        return stamp

    def receive(self, timeout: float) -> Stamped | None:
        got = self.sniffer.receive(timeout)
        if got is not None:
            self._drain()
        return got

    def flush(self) -> None:
        self.sniffer.flush()
        self._drain()

    def packets(self) -> list[Stamped]:
        return self.injected + self.sniffer.log

    def close(self) -> None:
        self.sniffer.close()
        os.close(self.fd)

    def _drain(self) -> None:
        """Read and drop what the kernel queued on the tun fd (the sniffer has the copies)."""
        while True:
            try:
                os.read(self.fd, 65536 + VNET_HDR_LEN)
            except OSError:  # BlockingIOError included: the queue is empty
                return
