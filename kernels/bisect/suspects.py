# SPDX-License-Identifier: GPL-2.0-only
"""Which upstream commits between two packaged kernels a failing test points at.

Why titles and not paths: a Debian changelog names each commit by its title only, and kernel
titles start with the area they touch (``tcp: …``, ``net: ipv4: …``, ``netfilter: nf_tables:
…``). The test's subsystem marker (netns/pytest_plugin.py's SUBSYSTEMS) names the area;
the title's prefix says whether a commit is in it:

1. the first specific prefix is the subsystem's own (``tcp:``, ``net: tcp:``, ``tcp_metrics:``);
2. a later prefix is (``rds: tcp:``), or a parent area's commit names the subsystem
   (``net: ipv4: bound TCP reordering sysctl writes``).

Every other commit of the range is left out; the report says how many there were. Within a
rank, a title sharing words with the failing test's name comes first (``tcp_rfc5961_rst-syn-recv``
→ ``tcp: challenge ACK for non-exact RST in SYN-RECEIVED``): the name is the one other hint of
what the test is about that a title can be held against.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kernels.acquire.changelog import Change

# Prefixes that say nothing about the area: skipped to reach the one that does.
_GENERIC = {"net", "networking", "revert"}
_ARCH_TAG = re.compile(r"^(\[[^\]]+\]\s*)+")
_PREFIX = re.compile(r"^([\w./-]+):\s")
_WORD = re.compile(r"[a-z0-9]+")
# Words of a test's node id that say where it lives or how it runs, not what it is about.
_PLACES = {"tests", "test", "cases", "unit", "corpus", "kernel", "packetdrill", "pkt", "py",
           "ipv4", "ipv6", "mapped", "broken", "the", "and", "not", "too", "for"}  # fmt: skip


@dataclass(frozen=True)
class Area:
    """A subsystem as commit titles show it: its own prefixes (a trailing ``*`` matches any
    suffix: ``tcp_*``), the parent areas its fixes also come under, and the words that name it
    in a title."""

    own: tuple[str, ...]
    parents: tuple[str, ...]
    words: tuple[str, ...]

    def owns(self, prefix: str) -> bool:
        return any(
            prefix == name or name.endswith("*") and prefix.startswith(name[:-1])
            for name in self.own
        )


_IP = ("ipv4", "ipv6", "inet", "inet6", "sock", "core", "skbuff")
AREAS = {
    "tcp": Area(("tcp", "tcp_*"), _IP, ("tcp",)),
    "udp": Area(("udp", "udp_*", "udplite", "udp6"), _IP, ("udp",)),
    "icmp": Area(("icmp", "icmpv6", "ping"), _IP, ("icmp", "pmtu")),
    "tunnel": Area(
        (
            "ipip",
            "ip_gre",
            "gre",
            "ip_tunnel",
            "ip_tunnels",
            "ip6_tunnel",
            "ip6_gre",
            "sit",
            "erspan",
            "tunnel",
        ),
        _IP,
        ("tunnel", "gre", "ipip"),
    ),  # fmt: skip
    "vxlan": Area(("vxlan",), (*_IP, "udp_tunnel"), ("vxlan",)),
    "bridge": Area(("bridge", "br_netfilter", "br_*"), ("core",), ("bridge",)),
    "netfilter": Area(
        ("netfilter", "nf_*", "nft_*", "nf_tables", "xt_*", "ipvs", "ipset", "conntrack"),
        _IP,
        ("netfilter", "nftables", "iptables", "conntrack"),
    ),  # fmt: skip
    "routing": Area(
        ("route", "fib", "fib_*", "fib6", "ip6_fib", "nexthop", "ipmr"),
        _IP,
        ("route", "fib", "nexthop", "rp_filter"),
    ),  # fmt: skip
    "softirq": Area(
        ("softirq", "napi", "gro", "rps", "net-sysfs"),
        ("core", "dev"),
        ("softirq", "backlog", "napi", "rps"),
    ),  # fmt: skip
}


@dataclass(frozen=True)
class Suspect:
    """A commit title of the range, why it is suspected, and its rank (1 before 2)."""

    change: Change
    tier: int
    why: str


def prefixes(title: str) -> list[str]:
    """The area prefixes of a title, lower case, split at ``/``, generic ones dropped:
    ``[x86] net: ipv4: bound …`` → ``["ipv4"]``; ``net/rds: tcp: …`` → ``["rds", "tcp"]``."""
    rest = _ARCH_TAG.sub("", title)
    found = []
    while (match := _PREFIX.match(rest)) is not None:
        found += [part for part in match.group(1).lower().split("/") if part]
        rest = rest[match.end() :]
    return [prefix for prefix in found if prefix not in _GENERIC]


def tier(change: Change, area: Area) -> tuple[int, str] | None:
    """The rank of one commit for one area and why, or None if it is not the area's."""
    found = prefixes(change.title)
    if found and area.owns(found[0]):
        return 1, f"prefix {found[0]}:"
    if any(area.owns(prefix) for prefix in found[1:]):
        return 2, "prefix " + ": ".join(found) + ":"
    words = re.compile(rf"\b({'|'.join(map(re.escape, area.words))})", re.IGNORECASE)
    if (not found or found[0] in area.parents) and words.search(change.title):
        return 2, f"{found[0] + ': ' if found else ''}names {area.words[0]}"
    return None


def name_words(nodeids: Iterable[str]) -> frozenset[str]:
    """The words of failing tests' node ids that may name what they test: ``…corpus::
    tcp_rfc5961_rst-syn-recv.pkt::ipv4`` → rfc5961, rst, syn, recv (subsystem names, places
    and words under three letters dropped)."""
    words = {w for nodeid in nodeids for w in _WORD.findall(nodeid.lower().split("/")[-1])}
    return frozenset(w for w in words if len(w) >= 3 and w not in _PLACES | set(AREAS))


def shared(title: str, words: frozenset[str]) -> tuple[str, ...]:
    """The test's words a title shares (a title word starting with one, or one with it)."""
    said = set(_WORD.findall(title.lower()))
    return tuple(sorted(w for w in words if any(t.startswith(w) or len(t) >= 3 and
                                                w.startswith(t) for t in said)))  # fmt: skip


def rank(
    changes: Iterable[Change], subsystems: Iterable[str], words: frozenset[str] = frozenset()
) -> list[Suspect]:
    """The suspects among `changes` for the failing test's subsystems, best first: by tier,
    then by how many of the test's `words` the title shares, then by upstream release (oldest
    first; Debian's own changes last), then as listed."""
    areas = [(name, AREAS[name]) for name in subsystems if name in AREAS]
    found: list[tuple[tuple[int, int, tuple[int, ...], int], Suspect]] = []
    for index, change in enumerate(changes):
        ranks = [(hit, name) for name, area in areas if (hit := tier(change, area)) is not None]
        if not ranks:
            continue
        (level, why), name = min(ranks)
        release = tuple(int(p) for p in change.release.split(".")) if change.release else (999,)
        common = shared(change.title, words)
        why = f"{name} marker, {why}" + (f", names {', '.join(common)}" if common else "")
        found.append(((level, -len(common), release, index), Suspect(change, level, why)))
    return [suspect for _, suspect in sorted(found, key=lambda item: item[0])]
