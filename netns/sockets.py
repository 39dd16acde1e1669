# SPDX-License-Identifier: GPL-2.0-only
"""``ss -tmi`` parsed into structured socket info.

``ss`` is the only interface that shows a socket's memory accounting (skmem: queued bytes
``w`` against the send buffer ``tb``) and its retransmission state (rto, backoff, lost,
unacked) together; C01's precondition is asserted on exactly these fields.
"""

import re
from dataclasses import dataclass, field

from .handle import Handle

_SKMEM_RE = re.compile(r"skmem:\(([^)]*)\)")
_SKMEM_FIELD_RE = re.compile(r"([a-z]+)(\d+)")
_KV_RE = re.compile(r"(?<![\w(,])([a-z_]+):(\S+)")


@dataclass
class SocketInfo:
    """One socket as ``ss -tmin`` shows it."""

    state: str
    recv_q: int
    send_q: int
    local: str
    peer: str
    skmem: dict[str, int] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)

    def _num(self, key: str) -> float | None:
        value = self.info.get(key)
        return None if value is None else float(value.split("/")[0])

    @property
    def rto(self) -> float | None:
        return self._num("rto")

    @property
    def backoff(self) -> int:
        return int(self._num("backoff") or 0)

    @property
    def cwnd(self) -> int | None:
        value = self._num("cwnd")
        return None if value is None else int(value)

    @property
    def retrans(self) -> tuple[int, int]:
        """(outstanding retransmitted segments, total retransmissions)."""
        cur, _, total = self.info.get("retrans", "0/0").partition("/")
        return int(cur), int(total or 0)

    @property
    def lost(self) -> int:
        return int(self._num("lost") or 0)

    @property
    def unacked(self) -> int:
        return int(self._num("unacked") or 0)

    @property
    def local_port(self) -> int:
        return int(self.local.rsplit(":", 1)[1])

    @property
    def peer_port(self) -> int:
        return int(self.peer.rsplit(":", 1)[1])


def parse(text: str) -> list[SocketInfo]:
    """Parse ``ss -tmin -H`` output (one header line per socket + indented detail line)."""
    sockets: list[SocketInfo] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            parts = line.split()
            if parts and parts[0].isdigit():
                parts.insert(0, "")  # a `state X` filter makes ss drop the State column
            if len(parts) < 5:
                continue
            sockets.append(SocketInfo(parts[0], int(parts[1]), int(parts[2]), parts[3], parts[4]))
            detail = " ".join(parts[5:])
        elif sockets:
            detail = line
        else:
            continue
        _parse_detail(sockets[-1], detail)
    return sockets


def _parse_detail(sock: SocketInfo, detail: str) -> None:
    m = _SKMEM_RE.search(detail)
    if m:
        sock.skmem.update({k: int(v) for k, v in _SKMEM_FIELD_RE.findall(m.group(1))})
        detail = detail[: m.start()] + detail[m.end() :]
    detail = re.sub(r"\w+:\([^)]*\)", "", detail)  # per-CC blocks such as bbr:(…)
    sock.info.update(dict(_KV_RE.findall(detail)))


def ss(ns: Handle, filter_expr: str = "") -> list[SocketInfo]:
    """TCP sockets in *ns*, optionally filtered (``ss`` filter syntax, e.g. 'sport = :80')."""
    argv = ["ss", "-tmin", "-H"]
    if filter_expr:
        argv += filter_expr.split()
    return parse(ns.run(argv).stdout)
