# SPDX-License-Identifier: GPL-2.0-only
"""Tokenizer for the packetdrill language (docs/packetdrill-language.md §2).

The language is defined by a longest-match lexer, so this one is too: at every position all
rules are tried and the longest match wins, ties going to the earlier rule. That single rule
explains every oddity users hit (``1e5`` is a word, ``5.`` is not a float, ``//`` needs a
newline), so it is implemented literally rather than as a hand-tuned scanner.
"""

import ipaddress
import re
from dataclasses import dataclass

KEYWORDS = frozenset(
    """
sa_family sin_port sin_addr msg_name msg_iov msg_flags msg_control cmsg_data cmsg_level
cmsg_type ee_errno ee_origin ee_type ee_code ee_info ee_data scm_sec scm_nsec fd u32 u64 ptr
events revents onoff linger htons ipv4 ipv6 icmp udp GREv0 gre raw sum off key seq none checksum
sequence# present encap psp spi mpls label tc ttl inet_addr inet6_addr ack eol ecr mss mtu nop
sack sackOK md5 TS FO FOEXP ECN e0b e1b ceb tos flowlabel flags Flags val win urg wscale ect01
ect0 ect1 noecn ce id""".split()
)

# Rules in priority order; (kind, regex). Keywords are handled separately because they are
# literal strings (one contains '#', which no regex class below covers).
_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("ELLIPSIS", re.compile(r"\.\.\.")),
    ("OPTION", re.compile(r"--[a-zA-Z0-9_]+")),
    ("FLOAT", re.compile(r"-?[0-9]*\.[0-9]+")),
    ("INTEGER", re.compile(r"-?[0-9]+")),
    ("HEX", re.compile(r"0x[0-9a-fA-F]+")),
    ("WORD", re.compile(r"[A-Za-z0-9_]+")),
    ("STRING", re.compile(r'"(?:[^"\\]|\\.)*"', re.S)),
    ("BACKQUOTE", re.compile(r"`(?:[^`\\]|\\.)*`", re.S)),
    ("CHAR", re.compile(r"[^ \t\n\r]")),
    ("SPACE", re.compile(r"[ \t\n\r]+")),
    ("COMMENT", re.compile(r"//[^\n]*\n|/\*.*?\*/", re.S)),
    ("CODE", re.compile(r"%\{.*?\}%", re.S)),
    ("IPV4", re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")),
]
_IPV6_RUN = re.compile(r"[0-9A-Fa-f:.]+")
_IPV6_MAX_LEN = 45
_KEYWORD_START = re.compile(r"[A-Za-z_]")


@dataclass(frozen=True)
class Token:
    """One token. ``line`` is where it starts, ``end_line`` where it ends (parse errors use the
    latter, like a lexer whose line counter has already moved past the token)."""

    kind: str
    text: str
    line: int
    end_line: int

    def is_char(self, ch: str) -> bool:
        return self.kind == "CHAR" and self.text == ch

    def is_kw(self, word: str) -> bool:
        return self.kind == "KW" and self.text == word

    @property
    def value(self) -> str:
        """The token's payload: delimiters stripped for strings, commands and code blocks."""
        if self.kind in ("STRING", "BACKQUOTE"):
            return self.text[1:-1]
        if self.kind == "CODE":
            return self.text[2:-2].strip(" \t")
        return self.text


def _match_ipv6(text: str, pos: int) -> int:
    """Length of the longest valid IPv6 literal at ``pos`` (0 if none).

    A literal needs ``::`` or eight groups, so ``1:1001`` (a sequence range) is never one.
    """
    run = _IPV6_RUN.match(text, pos)
    if not run:
        return 0
    # No literal is longer than 45 characters (six groups and a dotted quad); looking no
    # further keeps a long run of hex digits and colons from costing quadratic time.
    candidate = run.group()[:_IPV6_MAX_LEN]
    for end in range(len(candidate), 1, -1):
        piece = candidate[:end]
        if "::" not in piece and piece.count(":") != 7:
            continue
        try:
            ipaddress.IPv6Address(piece)
        except ValueError:
            continue
        return end
    return 0


def _match_keyword(text: str, pos: int) -> tuple[int, str]:
    if not _KEYWORD_START.match(text, pos):
        return 0, ""
    best = ""
    for kw in KEYWORDS:
        if text.startswith(kw, pos) and len(kw) > len(best):
            best = kw
    return len(best), best


def _define_token(value: str, line: int) -> Token:
    """Turn a ``-D`` value into the token it stands for (docs/packetdrill-language.md §2.6)."""
    if value.startswith('"'):
        return Token(
            "STRING", value if value.endswith('"') and len(value) > 1 else value + '"', line, line
        )
    if value.startswith("`"):
        return Token(
            "BACKQUOTE",
            value if value.endswith("`") and len(value) > 1 else value + "`",
            line,
            line,
        )
    number = _strtol(value)
    if number is not None:
        return Token("INTEGER", str(number), line, line)
    return Token("WORD", value, line, line)


def _strtol(value: str) -> int | None:
    """C ``strtol(value, 0)`` that must consume the whole string: ``0x10`` is 16, ``010`` is 8."""
    match = re.fullmatch(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", value)
    if not match:
        return None
    sign, digits = match.groups()
    if digits[:2].lower() == "0x":
        number = int(digits, 16)
    elif digits.startswith("0"):
        number = int(digits, 8)
    else:
        number = int(digits)
    return -number if sign == "-" else number


def tokenize(text: str, defines: dict[str, str] | None = None) -> list[Token]:
    """Split ``text`` into tokens (whitespace and comments dropped), ending with an EOF token.

    Words that name a ``-D`` define are replaced by the define's value; keywords never are.
    """
    defines = defines or {}
    tokens: list[Token] = []
    pos, line, size = 0, 1, len(text)
    while pos < size:
        best_kind, best_len = "", 0
        kw_len, kw = _match_keyword(text, pos)
        if kw_len:
            best_kind, best_len = "KW", kw_len
        for kind, pattern in _RULES:
            match = pattern.match(text, pos)
            if match and len(match.group()) > best_len:
                best_kind, best_len = kind, len(match.group())
        v6_len = _match_ipv6(text, pos)
        if v6_len > best_len:
            best_kind, best_len = "IPV6", v6_len
        piece = text[pos : pos + best_len]
        end_line = line + piece.count("\n")
        if best_kind == "KW":
            piece = kw
        if best_kind == "WORD" and piece in defines:
            tokens.append(_define_token(defines[piece], line))
        elif best_kind not in ("SPACE", "COMMENT"):
            tokens.append(Token(best_kind, piece, line, end_line))
        pos += best_len
        line = end_line
    tokens.append(Token("EOF", "", line, line))
    return tokens
