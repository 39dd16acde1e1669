# SPDX-License-Identifier: GPL-2.0-only
"""Prove a run left the root namespace as it found it.

A snapshot is the text of ``ip -d link``, ``ip addr``, ``ip route``/``ip -6 route`` (all
tables), ``ip rule`` and every ``net.*`` sysctl of the root namespace, with volatile parts
removed (counters, neighbour state). Two snapshots taken before and after a run must be
identical; ``python -m netns.rootstate compare`` prints the difference otherwise.

Fallback tunnel devices (tunl0, gre0, …) that the kernel itself creates in the root
namespace when a test's first ipip/gre link loads the module are reported separately: they
are the kernel's doing, not a test's, and netregress never configures them.
"""

import argparse
import difflib
import json
import re
import sys

from .commands import cmd

FALLBACK_DEVICES = (
    "tunl0",
    "gre0",
    "gretap0",
    "erspan0",
    "ip_vti0",
    "ip6tnl0",
    "sit0",
    "ip6gre0",
    "ip6_vti0",
)
# Counters that move on their own, whatever a run does.
_VOLATILE_SYSCTLS = re.compile(
    r"^net\.netfilter\.nf_conntrack_count|"
    r"^net\.ipv4\.(tcp_|udp_)?mem\b|^net\.core\.netdev_rss_key"
)


def snapshot() -> dict[str, str]:
    """The root namespace's configuration as comparable text, section by section."""
    sections = {
        "links": cmd(["ip", "-d", "-o", "link", "show"]).stdout,
        "addresses": cmd(["ip", "-o", "addr", "show"]).stdout,
        "routes4": cmd(["ip", "-4", "route", "show", "table", "all"]).stdout,
        "routes6": cmd(["ip", "-6", "route", "show", "table", "all"]).stdout,
        "rules": cmd(["ip", "rule", "show"]).stdout,
        "sysctls": cmd(["sysctl", "-a", "-r", r"^net\."], check=False).stdout,
    }
    sections["links"] = re.sub(
        r" (qlen|numtxqueues|numrxqueues|gso_max_\w+|gro_max_\w+|"
        r"tso_max_\w+) \d+",
        "",
        sections["links"],
    )
    sections["routes6"] = re.sub(r" expires \d+sec", "", sections["routes6"])
    sections["addresses"] = re.sub(r"valid_lft \S+ preferred_lft \S+", "", sections["addresses"])
    sections["sysctls"] = "\n".join(
        line for line in sections["sysctls"].splitlines() if not _VOLATILE_SYSCTLS.match(line)
    )
    return sections


def _without_fallbacks(text: str) -> tuple[str, list[str]]:
    kept: list[str] = []
    dropped: list[str] = []
    for line in text.splitlines():
        name = line.split(": ")[1].split("@")[0] if ": " in line else ""
        (dropped if name in FALLBACK_DEVICES else kept).append(line)
    return "\n".join(kept), dropped


def compare(before: dict[str, str], after: dict[str, str]) -> tuple[str, list[str]]:
    """(unified diff of everything that changed, new kernel fallback devices)."""
    diff: list[str] = []
    notes: list[str] = []
    for key in before:
        a, b = before[key], after.get(key, "")
        if key == "links":
            a, _ = _without_fallbacks(a)
            b, new_fallbacks = _without_fallbacks(b)
            notes = [line.split(": ")[1] for line in new_fallbacks if line not in before[key]]
        if key == "sysctls" and notes:
            b = "\n".join(
                line
                for line in b.splitlines()
                if not any(f".{dev}." in line for dev in FALLBACK_DEVICES)
            )
            a = "\n".join(
                line
                for line in a.splitlines()
                if not any(f".{dev}." in line for dev in FALLBACK_DEVICES)
            )
        diff += difflib.unified_diff(
            a.splitlines(), b.splitlines(), f"before/{key}", f"after/{key}", lineterm=""
        )
    return "\n".join(diff), notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m netns.rootstate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("snapshot", help="write a snapshot").add_argument("file")
    cmp = sub.add_parser("compare", help="compare two snapshots; exit 1 if they differ")
    cmp.add_argument("before")
    cmp.add_argument("after")
    args = parser.parse_args(argv)
    if args.action == "snapshot":
        with open(args.file, "w", encoding="utf-8") as f:
            json.dump(snapshot(), f)
        return 0
    with open(args.before, encoding="utf-8") as f:
        before = json.load(f)
    with open(args.after, encoding="utf-8") as f:
        after = json.load(f)
    diff, notes = compare(before, after)
    for dev in notes:
        print(f"rootstate: note: kernel created fallback device {dev} (module load)")
    if diff:
        print("rootstate: the root namespace changed during the run:\n" + diff)
        return 1
    print("rootstate: root namespace links, addresses, routes, rules and net.* sysctls unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
