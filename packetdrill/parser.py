# SPDX-License-Identifier: GPL-2.0-only
"""Recursive-descent parser: tokens → :class:`~.model.Script`, with every semantic check.

The whole file is parsed and checked before anything runs (docs/packetdrill-language.md §3), so a
malformed script never half-executes. Errors use upstream's exact wording and line rules
(docs/packetdrill-language.md §11): a syntax error names the token the parser was looking at, a
semantic error the line of the statement's head.
"""

import ipaddress

from . import protocols as P
from .config import Config
from .errors import ScriptError
from .lexer import Token
from .model import (
    ECT01,
    CodeEvent,
    CommandEvent,
    Encap,
    Event,
    EventTime,
    Expr,
    IcmpSpec,
    IpInfo,
    PacketEvent,
    SyscallEvent,
    TcpOption,
    TcpSpec,
    UdpSpec,
)

_ECN_WORDS = {"noecn": 0, "ect1": 1, "ect0": 2, "ce": 3, "ect01": ECT01}
_STRUCT_KEYS = frozenset(
    """sa_family sin_port sin_addr msg_name msg_iov msg_flags msg_control
cmsg_data cmsg_level cmsg_type ee_errno ee_origin ee_type ee_code ee_info ee_data scm_sec
scm_nsec fd u32 u64 ptr events revents onoff linger""".split()
)
_FO_MAX = {P.TCPOPT_FO: 38, P.TCPOPT_EXP: 36}
U32 = 0xFFFFFFFF
_S64_MAX = 2**63 - 1
# Deepest ``{``/``[`` nesting an expression may have: far beyond any real script, and well
# inside Python's recursion limit (each level costs three parser frames).
MAX_NESTING = 100


def number(token: Token) -> int:
    """An INTEGER or HEX token's value as upstream's lexer computes it: ``atoll``/``strtol``
    saturate at the signed 64-bit limits, so a 23-digit literal reads as 2**63 - 1 and later
    range checks report it in upstream's words."""
    value = int(token.text, 16) if token.kind == "HEX" else int(token.text, 10)
    return max(-_S64_MAX - 1, min(_S64_MAX, value))


class Parser:
    """Parses one token list. ``cfg`` must already be finalized (ICMP names depend on it)."""

    def __init__(self, path: str, tokens: list[Token], cfg: Config) -> None:
        self.path = path
        self.tokens = tokens
        self.pos = 0
        self.cfg = cfg
        self.head_line = 0
        self.depth = 0

    # --- token helpers -------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, offset: int = 1) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.tok
        if token.kind != "EOF":
            self.pos += 1
        return token

    def fail(self, token: Token | None = None) -> ScriptError:
        token = token or self.tok
        return ScriptError(
            f"{self.path}:{token.end_line}: parse error at '{token.text}': syntax error",
            token.end_line,
        )

    def semantic(self, message: str) -> ScriptError:
        line = self.head_line or self.tok.line
        return ScriptError(f"{self.path}:{line}: semantic error: {message}", line)

    def expect_char(self, ch: str) -> Token:
        if not self.tok.is_char(ch):
            raise self.fail()
        return self.next()

    def expect_kw(self, word: str) -> Token:
        if not self.tok.is_kw(word):
            raise self.fail()
        return self.next()

    def expect_kind(self, *kinds: str) -> Token:
        if self.tok.kind not in kinds:
            raise self.fail()
        return self.next()

    def integer(
        self, low: int, high: int, message: str, kinds: tuple[str, ...] = ("INTEGER",)
    ) -> int:
        value = number(self.expect_kind(*kinds))
        if not low <= value <= high:
            raise self.semantic(message)
        return value

    def accept_char(self, ch: str) -> bool:
        if self.tok.is_char(ch):
            self.next()
            return True
        return False

    def accept_kw(self, word: str) -> bool:
        if self.tok.is_kw(word):
            self.next()
            return True
        return False

    # --- script structure ----------------------------------------------------------------
    def parse_options(self) -> list[tuple[str, str | None]]:
        """The ``--name[=value]`` lines at the top (docs/packetdrill-language.md §3)."""
        options: list[tuple[str, str | None]] = []
        while self.tok.kind == "OPTION":
            name = self.next().text[2:]
            value: str | None = None
            if self.accept_char("="):
                value = self.option_value()
            options.append((name, value))
        return options

    def option_value(self) -> str:
        token = self.tok
        if token.kind == "WORD" and self.peek().is_char("="):
            self.next()
            self.next()
            rhs = self.expect_kind("WORD", "STRING", "BACKQUOTE")
            return f"{token.text}={rhs.text}"
        if token.kind in ("INTEGER", "WORD", "IPV4", "IPV6") or (
            token.kind == "KW" and token.text in ("ipv4", "ipv6")
        ):
            return self.next().text
        if token.kind == "STRING":
            return self.next().value
        raise self.fail()

    def starts_event(self) -> bool:
        token = self.tok
        return token.kind in ("INTEGER", "FLOAT") or token.is_char("+") or token.is_char("*")

    def parse_body(self) -> tuple[str | None, list[Event], str | None]:
        init = cleanup = None
        if self.tok.kind == "BACKQUOTE":
            self.head_line = self.tok.line
            init = self.next().value
        events: list[Event] = []
        while True:
            if self.starts_event():
                events.append(self.parse_event())
            elif self.tok.kind == "BACKQUOTE" and events and self.peek().kind == "EOF":
                self.head_line = self.tok.line
                cleanup = self.next().value
            elif self.tok.kind == "EOF" and events:
                return init, events, cleanup
            else:
                raise self.fail()

    # --- events ----------------------------------------------------------------------------
    def parse_time_value(self) -> tuple[bool, int]:
        relative = self.accept_char("+")
        return relative, self.seconds(self.expect_kind("INTEGER", "FLOAT"))

    def seconds(self, token: Token) -> int:
        """A time in whole or fractional seconds, as usecs. Upstream keeps them in a signed
        64-bit count, so anything beyond it (a 23-digit integer, 400 digits of float) is an
        error here rather than an overflow."""
        usecs = float(token.text) * 1e6 if token.kind == "FLOAT" else number(token) * 1000000
        if usecs < 0:
            raise self.semantic("negative time")
        if usecs > _S64_MAX:  # upstream overflows into "time goes backward" on this line
            raise ScriptError(
                f"{self.path}:{token.line}: semantic error: time out of range", token.line
            )
        return int(usecs)

    def parse_event(self) -> Event:
        line = self.tok.line
        time = EventTime()
        if self.accept_char("*"):
            time.any_time = True
        else:
            time.relative, time.usecs = self.parse_time_value()
            if self.accept_char("~"):
                time.end_relative, time.end_usecs = self.parse_time_value()
                if time.end_usecs < time.usecs:
                    raise self.semantic("time range is backwards")
            elif self.tok.kind == "ELLIPSIS":
                self.next()
                time.blocking_end = self.seconds(self.expect_kind("INTEGER", "FLOAT"))
        action = self.parse_action()
        event = Event(line, time, action)
        if time.any_time and not event.is_outbound:
            raise self.semantic("event time <star> can only be used with outbound packets")
        if time.end_usecs is not None and not event.is_outbound:
            raise self.semantic("event time range can only be used with outbound packets")
        if time.blocking_end is not None and not isinstance(action, SyscallEvent):
            raise self.semantic("blocking time ('...') can only be used with system calls")
        return event

    def parse_action(self) -> PacketEvent | SyscallEvent | CommandEvent | CodeEvent:
        token = self.tok
        self.head_line = token.line
        if token.is_char("<") or token.is_char(">"):
            return self.parse_packet()
        if token.kind == "WORD":  # a syscall; like upstream, the error is at the next token
            return self.parse_syscall()
        if token.kind == "BACKQUOTE":
            return CommandEvent(self.next().value)
        if token.kind == "CODE":
            return CodeEvent(self.next().value)
        raise self.fail()

    # --- packets -------------------------------------------------------------------------
    def parse_packet(self) -> PacketEvent:
        direction = self.next().text
        encaps = self.parse_encaps()
        ip_info = self.parse_ip_info()
        if ip_info.ecn == ECT01 and direction == "<":
            raise self.semantic("[ect01] can only be used with outbound packets")
        if self.tok.is_kw("encap"):
            self.next()
            self.expect_kw("psp")
            self.expect_kw("spi")
            self.expect_kind("INTEGER", "HEX")
            raise self.semantic("PSP encapsulation is only supported in wire mode")
        if self.accept_kw("udp"):
            if ip_info.ecn is not None:
                raise self.semantic("ECN can only be used with TCP packets")
            l4: TcpSpec | UdpSpec | IcmpSpec = self.parse_udp()
        elif self.accept_kw("icmp"):
            l4 = self.parse_icmp()
        else:
            l4 = self.parse_tcp(direction)
        if direction == ">":
            self.reject_unchecked(l4)
        return PacketEvent(direction, l4, ip_info, encaps)

    def reject_unchecked(self, l4: TcpSpec | UdpSpec | IcmpSpec) -> None:
        """Outbound values no engine can compare are errors, never silently accepted: the
        kernel picks the local port and the echo id, and what an ICMP message quotes is
        only checked by its size (write ``[raw (N)]``)."""
        if isinstance(l4, (TcpSpec, UdpSpec)) and (l4.sport or l4.dport):
            raise self.semantic(
                "unsupported: ports of an outbound packet are never "
                "compared (the socket's own ports are used)"
            )
        if isinstance(l4, IcmpSpec) and l4.echo_id is not None:
            raise self.semantic(
                "unsupported: the echo id of an outbound ICMP packet is the "
                "kernel's choice and is never compared"
            )
        if isinstance(l4, IcmpSpec) and l4.echoed is not None and l4.echoed[0] != "raw":
            raise self.semantic(
                "unsupported: an outbound ICMP packet's quoted header is "
                "never compared; give its size with [raw (N)]"
            )

    def parse_encaps(self) -> list[Encap]:
        encaps: list[Encap] = []
        while True:
            token = self.tok
            if token.kind == "KW" and token.text in ("ipv4", "ipv6"):
                self.next()
                info = self.parse_ip_info()
                kind = "IPV4" if token.text == "ipv4" else "IPV6"
                src = self.expect_kind(kind).text
                self.expect_char(">")
                dst = self.expect_kind(kind).text
                self.expect_char(":")
                encaps.append(Encap(token.text, src=src, dst=dst, ip_info=info))
            elif token.is_kw("GREv0") or token.is_kw("gre"):
                self.next()
                encaps.append(self.parse_gre())
            elif token.is_kw("mpls"):
                self.next()
                encaps.append(self.parse_mpls())
            else:
                return encaps

    def parse_gre(self) -> Encap:
        encap = Encap("gre")
        if self.accept_char(":"):
            return encap
        self.accept_char(",")
        encap.gre_explicit = True
        self.expect_kw("flags")
        self.expect_char("[")
        flags = 0
        named = {"checksum": 0x8000, "key": 0x2000, "sequence#": 0x1000}
        while True:
            word = self.next()
            if word.kind == "KW" and word.text in named:
                self.expect_kw("present")
                flags |= named[word.text]
            elif word.is_kw("flags"):
                flags |= self.integer(0, 0xFFFF, "GRE flags out of range", ("HEX",))
            elif not word.is_kw("none"):
                raise self.fail(word)
            if not self.accept_char(","):
                break
        self.expect_char("]")
        fields = [flags]
        for name, high in (("sum", 0xFFFF), ("off", 0xFFFF), ("key", U32), ("seq", U32)):
            self.expect_kw(name)
            if name == "key":
                self.accept_char("=")
            fields.append(self.integer(0, high, f"GRE {name} out of range", ("INTEGER", "HEX")))
        self.expect_char(":")
        encap.gre = (fields[0], fields[1], fields[2], fields[3], fields[4])
        return encap

    def parse_mpls(self) -> Encap:
        encap = Encap("mpls")
        while self.accept_char("("):
            self.expect_kw("label")
            label = self.integer(0, (1 << 20) - 1, "MPLS label out of range for 20 bits")
            self.expect_char(",")
            self.expect_kw("tc")
            tc = self.integer(0, 7, "MPLS tc out of range")
            self.expect_char(",")
            bottom = False
            if self.tok.is_char("["):
                self.next()
                if self.tok.kind != "WORD" or self.tok.text != "S":
                    raise self.fail()
                self.next()
                self.expect_char("]")
                self.expect_char(",")
                bottom = True
            self.expect_kw("ttl")
            ttl = self.integer(0, 255, "MPLS ttl out of range")
            self.expect_char(")")
            encap.mpls.append((label, tc, bottom, ttl))
            if len(encap.mpls) > 8:
                raise self.semantic("too many MPLS labels")
        if not encap.mpls:
            raise self.fail()
        self.expect_char(":")
        if not encap.mpls[-1][2]:
            raise self.semantic("expected [S] for MPLS label stack bottom")
        return encap

    def parse_ip_info(self) -> IpInfo:
        info = IpInfo()
        if not (self.tok.is_char("(") or self.tok.is_char("[")):
            return info
        closer = ")" if self.next().text == "(" else "]"
        if self.tok.is_kw("ttl"):
            self.next()
            info.ttl = self.integer(0, 255, "ttl out of range")
        else:
            if self.tok.kind == "KW" and self.tok.text in _ECN_WORDS:
                info.ecn = _ECN_WORDS[self.next().text]
            elif self.accept_kw("tos"):
                info.tos = self.integer(0, 0xFF, "tos out of range for 8 bits", ("HEX",))
            elif not self.tok.is_kw("flowlabel"):
                raise self.fail()
            if info.ecn is not None or info.tos is not None:
                if self.tok.is_char(","):
                    self.next()
                    if not self.tok.is_kw("flowlabel"):
                        raise self.fail()
            if self.accept_kw("flowlabel"):
                info.flowlabel = self.integer(
                    0, (1 << 20) - 1, "flowlabel out of range for 20 bits", ("HEX",)
                )
        self.expect_char(closer)
        return info

    def parse_ports(self) -> tuple[int, int]:
        if self.tok.kind == "INTEGER" and self.peek().is_char(">"):
            sport = number(self.next())
            self.next()
            dport = number(self.expect_kind("INTEGER"))
            if not 0 <= sport <= 0xFFFF:
                raise self.semantic("src port out of range")
            if not 0 <= dport <= 0xFFFF:
                raise self.semantic("dst port out of range")
            return sport, dport
        return 0, 0

    def parse_udp(self) -> UdpSpec:
        sport, dport = self.parse_ports()
        self.expect_char("(")
        length = self.integer(0, 0xFFFF, "UDP payload size out of range")
        if length > 0xFFFF - 8 - 60:
            raise self.semantic("UDP datagram too large")
        self.expect_char(")")
        return UdpSpec(length, sport, dport)

    def parse_icmp(self) -> IcmpSpec:
        v6 = self.cfg.wire_v6
        type_name = self.expect_kind("WORD").text
        type_num = P.icmp_type(type_name, v6)
        if type_num is None:
            raise self.semantic(f"bad ICMP type {type_name}")
        code = 0
        if self.tok.kind == "WORD":
            code_name = self.next().text
            found = P.icmp_code(type_name, code_name, v6)
            if found is None:
                raise self.semantic(f"bad ICMP code {code_name}")
            code = found
        spec = IcmpSpec(type_num, code)
        if self.accept_kw("mtu"):
            if v6:
                spec.mtu = self.integer(0, 2**32 - 1, "ICMPv6 MTU out of range")
                if type_num != 2 or code != 0:
                    raise self.semantic("ICMPv6 MTU is only valid for packet_too_big-0")
            else:
                spec.mtu = self.integer(0, 0xFFFF, "ICMPv4 MTU out of range")
                if type_num != 3 or code != 4:
                    raise self.semantic("ICMPv4 MTU is only valid for unreachable-frag_needed")
        if self.accept_kw("id"):
            spec.echo_id = self.integer(0, 0xFFFF, "invalid echo_id, must be between 0 and 65535")
        if self.accept_char("["):
            if self.accept_kw("udp"):
                self.expect_char("(")
                spec.echoed = (
                    "udp",
                    self.integer(0, 0xFFFF, "UDP payload size out of range"),
                    0,
                    0,
                )
                self.expect_char(")")
            elif self.accept_kw("raw"):
                self.expect_char("(")
                spec.echoed = ("raw", self.integer(8, 0xFFFF, "ICMP raw size out of range"), 0, 0)
                self.expect_char(")")
            else:
                start, end, length = self.parse_seq()
                spec.echoed = ("tcp", start, end, length)
            self.expect_char("]")
        return spec

    def parse_seq(self) -> tuple[int, int, int]:
        start = self.integer(0, U32, "TCP start sequence number out of range")
        self.expect_char(":")
        end = self.integer(0, U32, "TCP end sequence number out of range")
        self.expect_char("(")
        length = self.integer(0, 0xFFFF, "TCP payload size out of range")
        self.expect_char(")")
        if end != (start + length) & 0xFFFFFFFF:
            raise self.semantic("inconsistent TCP sequence numbers and payload size")
        return start, end, length

    def parse_flags(self) -> tuple[str, int | None]:
        token = self.tok
        text = ""
        if token.kind == "WORD":
            text = self.next().text
            if self.tok.is_char("."):
                text += self.next().text
            elif self.tok.kind == "FLOAT" and self.tok.text.startswith("."):
                text += self.next().text
        elif (
            token.is_char(".")
            or token.is_char("-")
            or (token.kind == "FLOAT" and token.text.startswith("."))
        ):
            text = self.next().text
        else:
            raise self.fail()
        if text == "-":
            return "", None
        flags, ace = "", None
        for ch in text:
            if ch not in ".FSRPEWAU01234567":
                raise self.semantic(f"Invalid TCP flag: '{ch}'")
            if ch.isdigit() or ch in "EWA":
                if ace is not None or (ch.isdigit() and any(c in flags for c in "EWA")):
                    raise self.semantic(f"Conflicting TCP flag: '{ch}'")
            if ch.isdigit():
                ace = int(ch)
            else:
                flags += ch
        if ace == 0:
            ace = None
        return flags, ace

    def parse_tcp(self, direction: str) -> TcpSpec:
        sport, dport = self.parse_ports()
        flags, ace = self.parse_flags()
        start, end, length = self.parse_seq()
        spec = TcpSpec(flags, ace, start, end, length, sport=sport, dport=dport)
        if self.accept_kw("ack"):
            spec.ack = self.integer(0, U32, "TCP ack sequence number out of range")
        if self.accept_kw("win"):
            spec.win = self.integer(0, 0xFFFF, "TCP window value out of range")
        if self.accept_kw("urg"):
            spec.urg = self.integer(0, 0xFFFF, "urg_ptr value out of range")
        if self.tok.is_char("<"):
            spec.options = self.parse_tcp_options()
        if direction == "<" and spec.win is None:
            raise self.semantic("window must be specified for inbound packets")
        if direction == "<" and spec.options is None:
            raise self.semantic("<...> for TCP options can only be used with outbound packets")
        return spec

    # --- TCP options ------------------------------------------------------------------------
    def parse_tcp_options(self) -> list[TcpOption] | None:
        self.expect_char("<")
        if self.tok.kind == "ELLIPSIS":
            self.next()
            self.expect_char(">")
            return None
        options = [self.parse_tcp_option()]
        while self.accept_char(","):
            options.append(self.parse_tcp_option())
        self.expect_char(">")
        total = sum(option_length(option) for option in options)
        if total > 40:
            raise self.semantic("TCP option list too long")
        if total % 4:
            raise self.semantic(
                "TCP options are not padded correctly to ensure TCP header is "
                f"a multiple of 4 bytes: {total % 4} excess bytes"
            )
        return options

    def parse_tcp_option(self) -> TcpOption:
        token = self.next()
        if token.is_kw("nop"):
            return TcpOption(P.TCPOPT_NOP)
        if token.is_kw("eol"):
            return TcpOption(P.TCPOPT_EOL)
        if token.is_kw("mss"):
            return TcpOption(P.TCPOPT_MSS, [self.integer(0, 0xFFFF, "mss value out of range")])
        if token.is_kw("wscale"):
            return TcpOption(
                P.TCPOPT_WSCALE, [self.integer(0, 0xFF, "window scale shift count out of range")]
            )
        if token.is_kw("sackOK"):
            return TcpOption(P.TCPOPT_SACK_PERM)
        if token.is_kw("sack"):
            edges: list[int] = []
            while self.tok.kind == "INTEGER":
                edges.append(
                    self.integer(0, 2**32 - 1, "TCP SACK left sequence number out of range")
                )
                self.expect_char(":")
                edges.append(
                    self.integer(0, 2**32 - 1, "TCP SACK right sequence number out of range")
                )
            return TcpOption(P.TCPOPT_SACK, edges)
        if token.is_kw("TS"):
            self.expect_kw("val")
            val = self.integer(0, 2**32 - 1, "ts val out of range")
            self.expect_kw("ecr")
            return TcpOption(P.TCPOPT_TS, [val, self.integer(0, 2**32 - 1, "ecr val out of range")])
        if token.is_kw("md5"):
            blob = self.hex_blob()
            if len(blob) > 32:
                raise self.semantic("TCP MD5 digest longer than 16 bytes")
            try:
                return TcpOption(P.TCPOPT_MD5, data=bytes.fromhex(blob))
            except ValueError:
                raise self.semantic("TCP MD5 digest is not a valid hex string") from None
        if token.is_kw("FO") or token.is_kw("FOEXP"):
            kind = P.TCPOPT_FO if token.text == "FO" else P.TCPOPT_EXP
            blob = "" if self.tok.is_char(",") or self.tok.is_char(">") else self.hex_blob()
            return TcpOption(kind, data=self.cookie(blob, _FO_MAX[kind]))
        if token.is_kw("ECN"):
            return self.parse_accecn()
        raise self.fail(token)

    def parse_accecn(self) -> TcpOption:
        first = self.tok
        if not (first.is_kw("e0b") or first.is_kw("e1b")):
            raise self.fail()
        order = [first.text, "ceb", "e1b" if first.text == "e0b" else "e0b"]
        option = TcpOption(P.TCPOPT_ACCECN0 if first.text == "e0b" else P.TCPOPT_ACCECN1)
        for name in order:
            if not self.accept_kw(name):
                break
            option.values.append(self.integer(0, 0xFFFFFF, "TCP AccECN field value out of range"))
            option.ecn_names.append(name)
        return option

    def hex_blob(self) -> str:
        token = self.tok
        if token.kind in ("WORD", "INTEGER") and not token.text.startswith("-"):
            return self.next().text
        raise self.fail()

    def cookie(self, blob: str, maximum: int) -> bytes:
        if len(blob) % 2:
            raise self.semantic("TCP fast open cookie has an odd number of digits")
        try:
            data = bytes.fromhex(blob)
        except ValueError:
            raise self.semantic(
                f"TCP fast open cookie '{blob}' is not a valid hex string"
            ) from None
        if len(data) > maximum:
            raise self.semantic(
                f"TCP fast open cookie of {len(data)} bytes exceeds maximum "
                f"cookie length of {maximum} bytes"
            )
        return data

    # --- system calls ------------------------------------------------------------------
    def parse_syscall(self) -> SyscallEvent:
        name = self.next().text
        self.expect_char("(")
        args: list[Expr] = []
        if not self.tok.is_char(")"):
            args.append(self.parse_expr())
            while self.accept_char(","):
                args.append(self.parse_expr())
        self.expect_char(")")
        self.expect_char("=")
        result = self.parse_expr()
        errno = None
        if self.tok.kind == "WORD":
            errno = self.next().text
            if not self.tok.is_char("("):
                raise self.fail()
        if self.accept_char("("):
            while self.tok.kind == "WORD" or self.tok.is_kw("flags"):
                self.next()
            self.expect_char(")")
        problem = unchecked_part(name, args)
        if problem:
            raise self.semantic(f"unsupported: {problem}")
        return SyscallEvent(name, args, result, errno)

    def parse_expr(self) -> Expr:
        left = self.parse_term()
        while self.accept_char("|"):
            left = Expr("binary", "|", [left, self.parse_term()])
        return left

    def parse_term(self) -> Expr:
        token = self.tok
        if token.kind == "ELLIPSIS":
            self.next()
            return Expr("ellipsis")
        if token.kind in ("INTEGER", "HEX"):
            self.next()
            return Expr("integer", number(token))
        if token.kind == "WORD":
            self.next()
            if self.accept_char("="):
                return Expr("keyed", key=token.text, items=[self.parse_expr()])
            return Expr("word", token.text)
        if token.kind == "STRING":
            text = ""
            while self.tok.kind == "STRING":
                text += self.next().value
            if self.tok.kind == "ELLIPSIS":
                self.next()
            return Expr("string", text)
        if token.is_char("["):
            return Expr("list", items=self.parse_sequence("[", "]"))
        if token.is_char("{"):
            return Expr("brace", items=self.parse_sequence("{", "}"))
        if token.kind == "KW":
            return self.parse_keyword_term(token)
        raise self.fail()

    def parse_sequence(self, opener: str, closer: str) -> list[Expr]:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ScriptError(
                f"{self.path}:{self.tok.end_line}: parse error at "
                f"'{self.tok.text}': expression nested more than {MAX_NESTING} "
                f"levels deep",
                self.tok.end_line,
            )
        self.expect_char(opener)
        items: list[Expr] = []
        if not self.tok.is_char(closer):
            items.append(self.parse_expr())
            while self.accept_char(","):
                items.append(self.parse_expr())
        self.expect_char(closer)
        self.depth -= 1
        return items

    def parse_keyword_term(self, token: Token) -> Expr:
        self.next()
        if token.text in ("inet_addr", "inet6_addr", "htons"):
            self.expect_char("(")
            arg = self.expect_kind("STRING" if token.text != "htons" else "INTEGER")
            self.expect_char(")")
            if token.text == "htons":
                return Expr("htons", number(arg))
            try:
                address = (
                    ipaddress.IPv4Address(arg.value)
                    if token.text == "inet_addr"
                    else ipaddress.IPv6Address(arg.value)
                )
            except ValueError:
                raise self.semantic(
                    "cannot parse in6_addr"
                    if token.text == "inet6_addr"
                    else "invalid IPv4 address"
                ) from None
            return Expr(token.text, address.packed)
        if token.text in _STRUCT_KEYS:
            index = None
            if self.accept_char("("):
                index = self.parse_expr()
                self.expect_char(")")
            self.expect_char("=")
            return Expr("keyed", key=token.text, items=[self.parse_expr()], index=index)
        raise self.fail(token)


def unchecked_part(name: str, args: list[Expr]) -> str:
    """What in a call's arguments upstream's grammar has no place for and no engine would
    compare ("" if nothing): iovec contents, a msghdr's msg_name, a cmsg without data."""
    iovecs = (
        args[1].items
        if name in ("readv", "writev") and len(args) > 1 and args[1].kind == "list"
        else []
    )
    for msg in (arg for arg in args if arg.kind == "brace"):
        for item in msg.items:
            if (
                item.kind == "keyed"
                and item.key == "msg_name"
                and (
                    item.items[0].kind != "ellipsis"
                    or (item.index is not None and item.index.kind != "ellipsis")
                )
            ):
                return "msg_name is the engine's live address: write msg_name(...)=..."
        iov, control = msg.field("msg_iov"), msg.field("msg_control")
        iovecs = iovecs + (iov.items if iov is not None and iov.kind == "list" else [])
        for cmsg in control.items if control is not None and control.kind == "list" else []:
            if cmsg.kind == "brace" and cmsg.field("cmsg_data") is None:
                return "a cmsg needs cmsg_data"
    for iovec in iovecs:
        if iovec.kind == "brace" and iovec.items and iovec.items[0].kind != "ellipsis":
            return "iovec contents are never compared: write {..., LENGTH}"
    return ""


def option_length(option: TcpOption) -> int:
    """Encoded length of one TCP option (used for the 40-byte and padding checks)."""
    kind = option.kind
    if kind in (P.TCPOPT_NOP, P.TCPOPT_EOL):
        return 1
    fixed = {P.TCPOPT_MSS: 4, P.TCPOPT_WSCALE: 3, P.TCPOPT_SACK_PERM: 2, P.TCPOPT_TS: 10}
    if kind in fixed:
        return fixed[kind]
    if kind == P.TCPOPT_SACK:
        return 2 + 4 * len(option.values)
    if kind in (P.TCPOPT_ACCECN0, P.TCPOPT_ACCECN1):
        return 2 + 3 * len(option.values)
    if kind == P.TCPOPT_EXP:
        return 4 + len(option.data)
    return 2 + len(option.data)
