# SPDX-License-Identifier: GPL-2.0-only
"""The script model: what the parser produces and the runtime consumes.

Plain dataclasses with no behaviour beyond formatting, so a parsed script can be inspected in
tests and linted without touching the kernel.
"""

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EventTime:
    """An event's time as written (usec). Runtime anchoring never mutates it (see runtime)."""

    usecs: int = 0
    relative: bool = False
    any_time: bool = False  # `*`
    end_usecs: int | None = None  # `A~B` range end
    end_relative: bool = False
    blocking_end: int | None = None  # `T...E`


@dataclass
class IpInfo:
    """``(...)``/``[...]`` after the direction: ECN/TOS, flow label, TTL
    (docs/packetdrill-language.md §5.2)."""

    ecn: int | None = None  # 0..3, or ECT01 for "ect0 or ect1"
    tos: int | None = None
    flowlabel: int | None = None
    ttl: int | None = None


ECT01 = -1


@dataclass
class Encap:
    """One encapsulation prefix (outer IP, GRE or MPLS header), outermost first."""

    kind: str  # "ipv4" | "ipv6" | "gre" | "mpls"
    src: str = ""
    dst: str = ""
    ip_info: IpInfo = field(default_factory=IpInfo)
    gre: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)  # flags, sum, off, key, seq
    gre_explicit: bool = False
    mpls: list[tuple[int, int, bool, int]] = field(default_factory=list)


@dataclass
class TcpOption:
    """A TCP option. ``values`` holds its numbers (mss, shift, sack edges, TS val/ecr, ECN
    counters) and ``data`` its raw bytes (md5 digest, fast-open cookie)."""

    kind: int
    values: list[int] = field(default_factory=list)
    data: bytes = b""
    ecn_names: list[str] = field(default_factory=list)


@dataclass
class TcpSpec:
    flags: str  # letters among "FSRP.UEWA"
    ace: int | None  # AccECN ACE digit, when one was written
    start: int
    end: int
    length: int
    ack: int = 0
    win: int | None = None
    urg: int = 0
    options: list[TcpOption] | None = field(default_factory=list)  # None means `<...>`
    sport: int = 0
    dport: int = 0


@dataclass
class UdpSpec:
    length: int
    sport: int = 0
    dport: int = 0


@dataclass
class IcmpSpec:
    type: int
    code: int
    mtu: int | None = None
    echo_id: int | None = None
    echoed: tuple[str, int, int, int] | None = None  # ("tcp", start, end, len) | ("udp", len) ...


@dataclass
class PacketEvent:
    direction: str  # "<" inbound, ">" outbound
    l4: TcpSpec | UdpSpec | IcmpSpec
    ip_info: IpInfo = field(default_factory=IpInfo)
    encaps: list[Encap] = field(default_factory=list)


@dataclass
class Expr:
    """A syscall argument expression (docs/packetdrill-language.md §6.2).

    ``kind`` is one of: ellipsis integer word string list brace binary keyed inet_addr
    inet6_addr htons. ``value`` holds the scalar, ``items`` the elements, ``key`` and ``index``
    the ``name(index)=`` part of a keyed element.
    """

    kind: str
    value: Any = None
    items: list["Expr"] = field(default_factory=list)
    key: str = ""
    index: "Expr | None" = None

    def field(self, name: str) -> "Expr | None":
        """The value of ``name=...`` inside a brace expression, if present."""
        for item in self.items:
            if item.kind == "keyed" and item.key == name:
                return item.items[0]
        return None


@dataclass
class SyscallEvent:
    name: str
    args: list[Expr]
    result: Expr
    errno: str | None = None


@dataclass
class CommandEvent:
    command: str


@dataclass
class CodeEvent:
    code: str


Action = PacketEvent | SyscallEvent | CommandEvent | CodeEvent


@dataclass
class Event:
    line: int
    time: EventTime
    action: Action

    @property
    def is_outbound(self) -> bool:
        return isinstance(self.action, PacketEvent) and self.action.direction == ">"

    @property
    def is_inbound(self) -> bool:
        return isinstance(self.action, PacketEvent) and self.action.direction == "<"

    def describe(self) -> str:
        """The ``<what>`` of timing errors (docs/packetdrill-language.md §11)."""
        action = self.action
        if isinstance(action, PacketEvent):
            return "outbound packet" if action.direction == ">" else "inbound packet"
        if isinstance(action, SyscallEvent):
            return "system call start"
        if isinstance(action, CommandEvent):
            return "command"
        return "data collection for code"


@dataclass
class Script:
    path: str
    events: list[Event]
    init_command: str | None = None
    cleanup_command: str | None = None
