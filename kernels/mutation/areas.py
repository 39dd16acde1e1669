# SPDX-License-Identifier: GPL-2.0-only
"""The parts of the kernel the suite covers, as the miner sorts them: by file and by the
prefix of an upstream commit title.

Why one table for both: `scripts/mutants mine` sets a diff of two Debian source packages
beside the changelog of the same range, and a person confirming a candidate revert reads the
titles of the candidate's own subsystem. A file and a title land in the same subsystem only
if one table names both. The names are the curated set's `Subsystem:` names where one fits
(`tunnel`, `vxlan`, `bridge`), so a confirmed candidate is narrowed like a curated mutant
(kernels/mutants/selection.toml).
"""

import fnmatch
import functools
import re
from dataclasses import dataclass

OTHER = "other"
# An umbrella prefix says only "networking" (or "qdiscs", "netfilter"): `net: dsa: …` is DSA's,
# not net/core's, so a title whose prefix right below an umbrella is unknown is nobody's here.
_UMBRELLAS = frozenset({"net", "net_sched", "sched", "netfilter"})
_ARCH = re.compile(r"^(?:\[[^]]*\]\s*)+")  # Debian's "[amd64] " before an arch-only fix
_REVERT = re.compile(r'^Revert\s+"(.*?)"?\s*$')
_PREFIX = re.compile(r"^([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*):\s+")


@dataclass(frozen=True)
class Area:
    """A subsystem: the files it owns (globs relative to the tree: a directory owns everything
    below it) and the title prefixes its commits carry (lower case, `net/tcp` counts as
    `net` then `tcp`)."""

    name: str
    paths: tuple[str, ...]
    prefixes: frozenset[str]


def _area(name: str, paths: str, prefixes: str) -> Area:
    return Area(name, tuple(paths.split()), frozenset(prefixes.split()))


# Most specific first: a file belongs to the first area one of whose globs matches it
# (net/ipv4/tcp_input.c is tcp's, not ipv4's).
AREAS = (
    _area("tcp", "net/ipv4/tcp*.c net/ipv6/tcp*.c include/net/tcp.h include/linux/tcp.h",
          "tcp tcp-ao tcp_ao tcp_bbr tcp_cubic tcp_metrics tcpv6"),
    _area("tunnel", "net/ipv4/ip_tunnel*.c net/ipv4/ipip.c net/ipv4/ip_gre.c net/ipv4/gre_*.c "
          "net/ipv6/ip6_tunnel.c net/ipv6/ip6_gre.c net/ipv6/sit.c drivers/net/geneve.c "
          "include/net/ip_tunnels.h include/net/ip6_tunnel.h include/net/gre.h",
          "ip_tunnel ip_tunnels ipip gre ip_gre ip6_gre ip6gre ip6_tunnel ip6tnl sit geneve "
          "tunnel tunnels"),
    _area("vxlan", "drivers/net/vxlan include/net/vxlan.h", "vxlan"),
    _area("bridge", "net/bridge", "bridge br_netfilter br_mdb"),
    _area("netem", "net/sched/sch_netem.c", "sch_netem netem"),
    _area("ipv4", "net/ipv4", "ipv4 ip inet icmp udp arp route fib nexthop igmp raw ping ipmr "
          "inetpeer"),
    _area("ipv6", "net/ipv6", "ipv6 ip6 icmpv6 ndisc addrconf udpv6 ip6mr"),
    _area("core", "net/core", "net core skbuff skb dev neighbour neigh rtnetlink page_pool gro "
          "netdev sock flow_dissector netpoll"),
)  # fmt: skip
NAMES = tuple(area.name for area in AREAS)
DEFAULT_PATHS = tuple(dict.fromkeys(path for area in AREAS for path in area.paths))
_BY_PREFIX = {prefix: area.name for area in reversed(AREAS) for prefix in area.prefixes}


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for "one of these globs, or a directory below one of them".

    Why one compiled regex: the miner asks it of the 90,000 members of a source tarball, and
    fnmatch over every member's parents took two minutes a version where this takes a second.
    `*` crosses `/` as in fnmatch, so a glob that matches a directory also matches what is
    below it by the `(/.*)?` tail alone."""
    bodies = [fnmatch.translate(pattern).removesuffix(r"\Z") for pattern in patterns]
    return re.compile(f"(?:{'|'.join(bodies)})(?:/.*)?\\Z", re.DOTALL)


def matches(path: str, *patterns: str) -> bool:
    """`path` (relative, in a tree) is one of `patterns` or below one; `*`, `?`, `[…]` glob."""
    return bool(patterns) and _compiled(patterns).match(path) is not None


def area_of_file(path: str) -> str:
    """The subsystem owning `path`, `other` for a file no area names."""
    for area in AREAS:
        if matches(path, *area.paths):
            return area.name
    return OTHER


def prefixes(title: str) -> tuple[list[str], str]:
    """A title's prefixes, outermost first, and its text after them (`[arch]` and `Revert
    "…"` unwrapped): `net/tcp: fix x` is (["net", "tcp"], "fix x")."""
    text = _ARCH.sub("", title.strip())
    if reverted := _REVERT.match(text):
        text = reverted.group(1)
    found: list[str] = []
    while prefix := _PREFIX.match(text):
        found.extend(part.lower() for part in prefix.group(1).split("/"))
        text = text[prefix.end() :]
    return found, text


def area_of_title(title: str) -> str:
    """The subsystem of an upstream commit title, by its most specific known prefix that
    sits at the top or right below an umbrella or another known prefix.

    `net: bridge: mcast: x` is bridge's (mcast is unknown, bridge is not); `net: dsa: x` is
    nobody's here (dsa is unknown, right below the umbrella `net`); `usb: core: x` and
    `drm/bridge: x` are nobody's either (their `core` and `bridge` sit below another
    subsystem's name); `net: x` is core's."""
    found, _ = prefixes(title)
    for index in range(len(found) - 1, -1, -1):
        outer = found[index - 1] if index else ""
        if found[index] in _BY_PREFIX:
            placed = not outer or outer in _UMBRELLAS or outer in _BY_PREFIX
            return _BY_PREFIX[found[index]] if placed else OTHER
        if outer in _UMBRELLAS:
            return OTHER
    return OTHER
