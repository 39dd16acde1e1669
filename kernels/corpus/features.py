# SPDX-License-Identifier: GPL-2.0-only
"""Feature markers of the kernel's packetdrill scripts, read from their file names.

Why file names: the kernel flattens packetdrill's folders into names (``tcp_<folder>_<test>.pkt``
: ``tcp_slow_start_slow-start-after-idle.pkt`` came from ``tcp/slow_start/``), so the folder a
kernel engineer knows is the feature, and ``pytest -m fastopen`` or a mutant's selection picks
its scripts without a list to keep. A folder this table does not know yet still becomes a
marker (registered when the corpus is collected, described as such), never a silent drop.
"""

import re

# Marker → what its scripts exercise. Longest prefixes first where one contains another.
FEATURES: dict[str, str] = {
    "accecn": "Accurate ECN (AccECN) negotiation, counters and options",
    "basic": "a plain client and server exchange",
    "blocking": "blocking accept, connect, read and write",
    "close": "closing: FIN, RST and close in each state",
    "disorder": "segments arriving out of the expected state order",
    "dsack": "duplicate SACK (D-SACK)",
    "ecn": "classic ECN (RFC 3168)",
    "eor": "MSG_EOR: no coalescing across record ends",
    "fast_recovery": "fast recovery and proportional rate reduction (PRR)",
    "fastopen": "TCP Fast Open (client and server)",
    "inq": "TCP_INQ: bytes still to read, as a control message",
    "limited_transmit": "limited transmit (RFC 3042)",
    "md5": "TCP MD5 signatures",
    "nagle": "Nagle, TCP_CORK, TCP_NODELAY and MSG_MORE",
    "ooo": "out-of-order receive queue",
    "rcv": "the receive window: shrinking, zero window, bounds",
    "rfc5961": "RFC 5961 challenge ACKs",
    "rto": "retransmission timeouts",
    "sack": "selective acknowledgements (SACK)",
    "sendfile": "sendfile()",
    "slow_start": "slow start and congestion window growth",
    "splice": "splice()",
    "syncookies": "SYN cookies",
    "syscall": "system calls with bad arguments",
    "tcp_info": "TCP_INFO fields",
    "timestamping": "SO_TIMESTAMPING transmit timestamps",
    "ts": "TCP timestamps (TS.Recent)",
    "user_timeout": "TCP_USER_TIMEOUT",
    "validate": "segment validation",
    "zerocopy": "MSG_ZEROCOPY transmit",
}
# A feature that is a kind of another: `-m sack` picks the D-SACK scripts too, `-m ecn` AccECN.
IMPLIES: dict[str, str] = {"dsack": "sack", "accecn": "ecn"}
_FIRST_WORD = re.compile(r"^tcp_([a-z0-9]+)")
UNKNOWN = "a feature folder of the kernel's packetdrill corpus (from its file names)"


def features_of(name: str) -> list[str]:
    """The feature markers of a script named `name` (the longest known folder it starts
    with, else its first word), plus what that feature implies."""
    known = [
        feature
        for feature in FEATURES
        if name.startswith(f"tcp_{feature}_") or name.startswith(f"tcp_{feature}-")
    ]
    if known:
        feature = max(known, key=len)
    elif match := _FIRST_WORD.match(name):
        feature = match.group(1)
    else:
        return []
    return [feature, *([IMPLIES[feature]] if feature in IMPLIES else [])]
