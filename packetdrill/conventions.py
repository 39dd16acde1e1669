# SPDX-License-Identifier: GPL-2.0-only
"""The IP variants a ``.pkt`` script runs under, the arguments each variant passes, and the
markers our corpus writes in its scripts.

Upstream's corpus runner (``run_all.py`` in google/packetdrill) runs every script as IPv4,
IPv4-mapped-IPv6 and IPv6, each with a fixed address set and a few ``-D`` defines that the
corpus relies on (``TFO_COOKIE``, ``CMSG_LEVEL_IP`` …); a script named ``*v4.pkt`` skips the
IPv6 variant and ``*v6.pkt`` the IPv4 ones. Our pytest plugin and the conformance harness both
follow that convention, so it lives here once, restated as data (docs/packetdrill-language.md §12).
The kernel's own runner (``ksft_runner.sh``) is not restated: it changes between kernels, so
what it passes is learnt by running it (kernels/corpus/runner.py).
"""

import re
from pathlib import Path

from .loader import CliOptions

EXPECT_FAIL = re.compile(r"//\s*netregress:\s*expect-fail:\s*(.+?)\s*$", re.M)
# For scripts whose expectations rely on a driver being absent (netns.features names).
SKIP_IF_HAS = re.compile(r"//\s*netregress:\s*skip-if-kernel-has:\s*(.+?)\s*$", re.M)
# A script's own broken variant: `// netregress: broken ID: `OLD` -> `NEW` why`. The copy with
# OLD (exactly once in the script) replaced by NEW is the strict-xfail proof that its oracle
# can fail (a configuration change, never an edit of what the script expects).
BROKEN = re.compile(
    r"//\s*netregress:\s*broken\s+([\w-]+):\s*`([^`]+)`\s*->\s*`([^`]*)`\s*(.*?)\s*$", re.M
)
_IP_VERSION_LINE = re.compile(r"^--ip_version=(\S+)", re.M)
_V4_COMMON = [
    "--local_ip=192.168.0.1",
    "--gateway_ip=192.168.0.1",
    "--netmask_ip=255.255.0.0",
    "--remote_ip=192.0.2.1",
    "-D",
    "TFO_COOKIE=3021b9d889017eeb",
    "-D",
    "CODE=host_unreachable",
]
VARIANTS: dict[str, list[str]] = {
    "ipv4": [
        "--ip_version=ipv4",
        *_V4_COMMON,
        "-D",
        "CMSG_LEVEL_IP=SOL_IP",
        "-D",
        "CMSG_TYPE_RECVERR=IP_RECVERR",
    ],
    "ipv4-mapped-ipv6": [
        "--ip_version=ipv4-mapped-ipv6",
        *_V4_COMMON,
        "-D",
        "CMSG_LEVEL_IP=SOL_IPV6",
        "-D",
        "CMSG_TYPE_RECVERR=IPV6_RECVERR",
    ],
    "ipv6": [
        "--ip_version=ipv6",
        "--mtu=1520",
        "--local_ip=fd3d:0a0b:17d6::1",
        "--gateway_ip=fd3d:0a0b:17d6:8888::1",
        "--remote_ip=fd3d:fa7b:d17d::1",
        "-D",
        "TFO_COOKIE=c1d1e9742a47a9bc",
        "-D",
        "CMSG_LEVEL_IP=SOL_IPV6",
        "-D",
        "CMSG_TYPE_RECVERR=IPV6_RECVERR",
    ],
}
# Every script also runs with this, as upstream's runner passes it to each one.
COMMON_OPTIONS: CliOptions = [("send_omit_free", None)]


def args_to_options(args: list[str]) -> CliOptions:
    """``["--name=value", "-D", "X=1"]`` as (name, value) options."""
    options: CliOptions = []
    i = 0
    while i < len(args):
        if args[i] == "-D":
            options.append(("define", args[i + 1]))
            i += 2
            continue
        name, sep, value = args[i][2:].partition("=")
        options.append((name, value if sep else None))
        i += 1
    return options


def variant_options(variant: str) -> CliOptions:
    """The variant's arguments as (name, value) options."""
    return args_to_options(VARIANTS[variant])


def upstream_variants(path: Path) -> list[str]:
    """Upstream's naming rule alone: ``*v6.pkt`` is IPv6 only, ``*v4.pkt`` IPv4 and mapped."""
    name = path.name
    return (
        ["ipv6"]
        if name.endswith("v6.pkt")
        else ["ipv4", "ipv4-mapped-ipv6"]
        if name.endswith("v4.pkt")
        else list(VARIANTS)
    )


def variants_for(path: Path, text: str) -> list[str]:
    """Our corpus's rule: upstream's naming, and a ``--ip_version=`` line restricts the script
    to that variant (upstream's runner would override the line from its command line)."""
    chosen = upstream_variants(path)
    pinned = _IP_VERSION_LINE.search(text)
    if pinned:
        chosen = [v for v in chosen if v == pinned.group(1)] or [pinned.group(1)]
    return [v for v in chosen if v in VARIANTS]
