# SPDX-License-Identifier: GPL-2.0-only
"""One tcpdump-like line per captured packet, for the failures of assertions about captures.

Why: a case asserts on what crossed the wire, and when it fails a person reads the packets.
scapy's repr of one packet is a few hundred characters of every field of every layer, and a
list of them is unreadable; scapy's ``summary()`` names only the innermost addresses, so a
VXLAN or IP-in-IP packet loses its outer header, which is what the tunnel cases are about. A
line in tcpdump's words, outer headers first, is what the kernel developer reading the failure
already knows: ``IP 10.1.0.3.40000 > 10.1.0.4.8472: VXLAN, vni 1: IP 10.244.3.2 > 10.244.4.2:
ICMP echo request, id 1, seq 1, length 64``.

Captures hand out :class:`Packets` (a list whose repr is these lines, one per line, so pytest's
"where" explanations read well) and the pytest plugin explains comparisons of packets with
:func:`explain` (``pytest_assertrepr_compare``). Both are bounded (:func:`listing`): a burst of
thousands of packets shows its first and last ones, and how many lie between.

pytest writes a value's repr on one line of its explanation (it escapes the newlines) and cuts
it to 240 characters; :func:`readable` gives a failed assertion's text back the lines of the
packet lists it showed, and drops the payload bytes of the scapy reprs of single packets
(``<Raw  load=b'xxxx…' |>``), which bury the assertion under a wall of ``x``.
"""

import ast
import re
import reprlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, GRE, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Padding

# scapy's TCP flag letters and tcpdump's for them, in tcpdump's order (FIN SYN RST PSH ACK URG
# ECE CWR).
_TCP_FLAGS = tuple(zip("FSRPAUEC", "FSRP.UEW", strict=True))
FIRST, LAST = 8, 4  # the packets a listing shows: the first ones, then the last ones
T = TypeVar("T")
_EDGE = 40  # characters of a list's one-line text that pytest's cut always keeps at each end
# The bytes of a payload (Raw, Padding) in a scapy repr, whole, or cut by pytest's "..." where
# the literal began or ended before the cut.
_BYTES = r"""(?:[^'"\\]|\\.)*"""
_LOAD = re.compile(rf"""\bload=b(['"]){_BYTES}\1""")
_CUT_LOAD = re.compile(rf"""\bload=b['"]{_BYTES}(?=\.\.\.)|(?<=\.\.\.){_BYTES}['"](?= \|>)""")


def line(pkt: Packet) -> str:
    """``pkt`` as one line in tcpdump's words, outer headers first (no link layer unless it
    carries something other than IP or ARP)."""
    return _from(pkt.getlayer(IP) or pkt.getlayer(IPv6) or pkt.getlayer(ARP) or pkt)


def lines(packets: Iterable[Packet]) -> list[str]:
    return [line(pkt) for pkt in packets]


def listing(packets: Sequence[T], show: Callable[[T], str]) -> list[str]:
    """A line per packet, bounded: the first FIRST, ``… K more``, the last LAST (all of them
    when they fit). Only the packets shown are turned into words (*show*: a scapy packet's
    :func:`line`, or a pcap record's)."""
    if len(packets) <= FIRST + LAST + 1:
        return [show(pkt) for pkt in packets]
    return [
        *(show(pkt) for pkt in packets[:FIRST]),
        f"… {len(packets) - FIRST - LAST} more",
        *(show(pkt) for pkt in packets[len(packets) - LAST :]),
    ]


def explain(op: str, left: object, right: object) -> list[str] | None:
    """pytest's explanation of ``left op right`` when a side is a packet or a list of packets
    (``pytest_assertrepr_compare``), each packet on a line of its own; None otherwise."""
    sides = [
        (name, value, _packet_list(value)) for name, value in (("left", left), ("right", right))
    ]
    if all(found is None for _, _, found in sides):
        return None
    short = [_short(value, found) for _, value, found in sides]
    explanation = [f"{short[0]} {op} {short[1]}"]
    for name, value, found in sides:
        if found is None:
            explanation.append(f"{name}: {reprlib.repr(value)}")
        else:
            explanation.append(f"{name}: {_count(found)}")
            explanation += [f"  {text}" for text in listing(found, line)]
    return explanation


def readable(text: str) -> str:
    """A failed assertion's *text* as pytest wrote it, with the packet lists it showed back on
    lines of their own, and the scapy reprs of single packets without their payload bytes
    (``load=<200 bytes>``). Packet lists are the :class:`Packets` whose repr was asked for
    since :func:`forget`: pytest asks for them while it writes the failure, and its text cannot
    be parsed back (a line holds ``>``, and a long value loses its middle to ``...``)."""
    for shown in dict.fromkeys(_shown):
        flat = shown.replace("\n", "\\n")
        unfolded = shown.replace("\n", "\n    ")
        if flat in text:
            text = text.replace(flat, unfolded)
        elif len(flat) > 2 * _EDGE:
            head, tail = re.escape(flat[:_EDGE]), re.escape(flat[-_EDGE:])
            text = re.sub(f"{head}.*?{tail}", unfolded.replace("\\", r"\\"), text)
    text = _LOAD.sub(lambda m: f"load=<{len(ast.literal_eval(m[0][5:]))} bytes>", text)
    return _CUT_LOAD.sub(lambda m: "load=<bytes>" if m[0].startswith("load=") else "", text)


def forget() -> None:
    """A new test: the packet lists an earlier one showed are not this one's."""
    _shown.clear()


_shown: deque[str] = deque(maxlen=16)  # the reprs of the latest packet lists, for readable()


def _packet_list(value: object) -> list[Packet] | None:
    """``value`` as packets: one packet, or a non-empty list or tuple of nothing else."""
    if isinstance(value, Packet):
        return [value]
    if isinstance(value, list | tuple) and value and all(isinstance(v, Packet) for v in value):
        return list(value)
    return None


def _short(value: object, found: list[Packet] | None) -> str:
    if found is None:
        return reprlib.repr(value)
    return line(found[0]) if isinstance(value, Packet) else f"[{_count(found)}]"


def _count(packets: list[Packet]) -> str:
    return f"{len(packets)} packet{'' if len(packets) == 1 else 's'}"


class Packets(list[Packet]):
    """Captured packets: a plain list, whose repr shows each packet as its :func:`line`.

    :meth:`where` filters them into another :class:`Packets`: a list comprehension would give
    a plain list, and a failing ``assert len(requests) == 2`` would print scapy's repr of each.
    """

    def where(self, predicate: Callable[[Packet], bool]) -> "Packets":
        return Packets(pkt for pkt in self if predicate(pkt))

    def __repr__(self) -> str:
        """``<3 packets:`` and a line per packet (:func:`listing`), ``>`` on a line of its own
        (where the list ends, for :func:`readable`: a tcpdump line holds ``>`` too)."""
        if not self:
            return "[]"
        text = "\n".join([f"<{_count(self)}:", *(f"  {text}" for text in listing(self, line)), ">"])
        _shown.append(text)
        return text


def _from(layer: Packet) -> str:
    if isinstance(layer, IP | IPv6):
        return _ip(layer)
    if isinstance(layer, ARP):
        if layer.op == 1:
            return f"ARP, Request who-has {layer.pdst} tell {layer.psrc}"
        return f"ARP, Reply {layer.psrc} is-at {layer.hwsrc}"
    if isinstance(layer, Ether):
        inner = layer.payload
        if isinstance(inner, IP | IPv6 | ARP):
            return _from(inner)
        return f"{layer.src} > {layer.dst}, ethertype 0x{layer.type:04x}, length {len(layer)}"
    return str(layer.summary())


def _ip(ip: Packet) -> str:
    name = "IP" if isinstance(ip, IP) else "IP6"
    l4 = ip.payload
    if isinstance(l4, TCP | UDP):
        head = f"{name} {ip.src}.{l4.sport} > {ip.dst}.{l4.dport}: "
        if isinstance(l4, TCP):
            flags = "".join(mark for bit, mark in _TCP_FLAGS if bit in str(l4.flags))
            return (
                f"{head}Flags [{flags or 'none'}], seq {l4.seq}, ack {l4.ack}, "
                f"win {l4.window}, length {_length(l4.payload)}"
            )
        if isinstance(l4.payload, VXLAN):
            return f"{head}VXLAN, vni {l4.payload.vni}: {_from(l4.payload.payload)}"
        return f"{head}UDP, length {_length(l4.payload)}"
    head = f"{name} {ip.src} > {ip.dst}: "
    if isinstance(l4, IP | IPv6):
        return head + _ip(l4)
    if isinstance(l4, GRE):
        return head + f"GREv{l4.version}: {_from(l4.payload)}"
    if isinstance(l4, ICMP):
        return head + _icmp(l4)
    if type(l4).__name__.startswith("ICMPv6"):
        return head + f"ICMP6, {str(l4.name).removeprefix('ICMPv6 ')}, length {_length(l4)}"
    return head + str(l4.summary())


def _icmp(icmp: Packet) -> str:
    kind = str(icmp.sprintf("%ICMP.type%")).replace("-", " ")
    if icmp.type in (0, 8):
        return f"ICMP {kind}, id {icmp.id}, seq {icmp.seq}, length {_length(icmp)}"
    code = str(icmp.sprintf("%ICMP.code%")).replace("-", " ")
    mtu = f", mtu {icmp.nexthopmtu}" if icmp.type == 3 and icmp.code == 4 else ""
    return f"ICMP {kind} ({code}){mtu}"


def _length(layer: Packet) -> int:
    """Bytes of ``layer`` and what it carries, without the Ethernet padding of a short frame
    (a pure ACK is padded to the 60-byte minimum; tcpdump says ``length 0``)."""
    padding = layer.getlayer(Padding)
    return len(layer) - (len(padding) if padding is not None else 0)
