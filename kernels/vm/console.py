# SPDX-License-Identifier: GPL-2.0-only
"""Scanning a guest console for kernel crashes, NIPA-style.

Why anchored patterns: the console also carries pytest's output; matching only at the start of
a kernel message (after the optional `[  12.345678]` timestamp) keeps a test that merely prints
the word "BUG" from turning into a crash.
"""

import re
from dataclasses import dataclass

_PREFIX = r"^(?:<\d>)?(?:\[\s*\d+\.\d+\]\s*)?(?:\[\s*[TC]\d+\]\s*)?"
_SIGNS = [
    "Kernel panic - not syncing",
    "Oops",
    "BUG:",
    "RIP:",
    "Call Trace:",
    "general protection fault",
    "watchdog: BUG: soft lockup",
    "INFO: task .* blocked for more than",
]
_CRASH = re.compile(_PREFIX + "(?:" + "|".join(_SIGNS) + ")")
BEFORE, AFTER = 5, 40


@dataclass(frozen=True)
class Crash:
    """A crash found on the console: the first telling line and the lines around it."""

    reason: str
    excerpt: str


def scan(console: str) -> Crash | None:
    """The first crash on the console, with an excerpt, or None for a clean console."""
    lines = console.replace("\r", "").splitlines()
    for number, line in enumerate(lines):
        if _CRASH.match(line):
            excerpt = lines[max(0, number - BEFORE) : number + AFTER]
            return Crash(reason=line.strip(), excerpt="\n".join(excerpt))
    return None


def tail(console: str, count: int = 30) -> str:
    """The last `count` console lines: the excerpt for hangs and deaths without a kernel sign."""
    return "\n".join(console.replace("\r", "").splitlines()[-count:])
