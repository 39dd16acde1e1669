# SPDX-License-Identifier: GPL-2.0-only
"""Which scripts of the kernel's network selftests are items, their subsystem markers, the
fast set, and which may run on a host.

Why the Makefiles' ``TEST_PROGS``: that list is what the kselftest runner runs (the other
``.sh`` files are libraries and helpers), and it changes with every kernel, so it is read
from the tree under test, never written down here. What *is* written down here
(``scripts.toml``) is our judgement of them: the fast set (measured on a host, docs/
kernel-selftests.md) and the scripts a host must never run, each with why.

Why a host refuses some scripts outright: a few configure what no namespace can hold —
netdevsim devices (created through /sys/bus/netdevsim in the initial namespace), debugfs,
global sysctls (``kernel.*``, ``vm.*``). Contained, they would fail for want of what the
container forbids, and that is not the kernel's failure; they run in guests only. A script's
own text says whether it does any of this (:func:`uncontained`).
"""

import fnmatch
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError

FOLDERS = ("", "forwarding")  # below tools/testing/selftests/net: the folders run as items
CATALOG = Path(__file__).with_name("scripts.toml")
_ASSIGN = re.compile(r"^TEST_PROGS\s*(?::=|\+=|=)\s*(?P<words>.*)$")
# The subsystem markers of netns/pytest_plugin.py's SUBSYSTEMS, by script name (first match).
SUBSYSTEM_PATTERNS = (
    ("*vxlan*", "vxlan"),
    ("*bridge*", "bridge"),
    ("fdb_*", "bridge"),
    ("*mdb*", "bridge"),
    ("*gre*", "tunnel"),
    ("*ipip*", "tunnel"),
    ("*tunnel*", "tunnel"),
    ("l2_tos_ttl_inherit.sh", "tunnel"),
    ("traceroute*", "icmp"),
    ("fib*", "routing"),
    ("*nexthop*", "routing"),
    ("*route*", "routing"),
    ("router*", "routing"),
    ("*multipath*", "routing"),
    ("rtnetlink*", "routing"),
    ("pmtu.sh", "icmp"),
    ("icmp*", "icmp"),
    ("*tcp*", "tcp"),
    ("tfo*", "tcp"),
    ("udp*", "udp"),
    ("*netfilter*", "netfilter"),
)
# What a script may do only in a guest: (pattern in its text, why).
_UNCONTAINED = (
    (
        re.compile(r"/sys/bus/netdevsim|create_netdevsim"),
        "creates netdevsim devices (in the initial namespace)",
    ),
    (re.compile(r"/sys/kernel/debug|debugfs"), "uses debugfs, which is global"),
    (
        re.compile(r"sysctl\s+(?:-\w+\s+)*(?:kernel|vm)\.|/proc/sys/(?:kernel|vm)/"),
        "changes global sysctls (kernel.*, vm.*)",
    ),
)


@dataclass(frozen=True)
class Catalog:
    """Our judgement of the scripts: the fast set, and the scripts a host refuses (why)."""

    fast: frozenset[str]
    guests_only: dict[str, str]


def load_catalog(path: Path = CATALOG) -> Catalog:
    """Read ``scripts.toml``: ``fast = [names]``, ``[guests-only]`` name = "why"."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise KernelsError(f"cannot read {path}: {exc}") from None
    fast = data.get("fast", [])
    guests = data.get("guests-only", {})
    if not isinstance(fast, list) or not all(isinstance(name, str) for name in fast):
        raise KernelsError(f"{path}: 'fast' must be a list of script names")
    if not isinstance(guests, dict) or not all(isinstance(why, str) for why in guests.values()):
        raise KernelsError(f"{path}: [guests-only] must map script names to reasons")
    return Catalog(frozenset(fast), dict(guests))


def makefile_scripts(makefile: Path) -> list[str]:
    """The scripts a selftests Makefile lists in ``TEST_PROGS`` (continuation lines joined;
    words made of make variables left out)."""
    try:
        text = makefile.read_text(errors="replace")
    except OSError as exc:
        raise KernelsError(f"cannot read {makefile}: {exc.strerror}") from None
    names: list[str] = []
    for line in text.replace("\\\n", " ").splitlines():
        found = _ASSIGN.match(line.strip())
        if found:
            names += [word for word in found["words"].split() if "$" not in word]
    return names


def scripts(net: Path) -> list[str]:
    """Every script the runner runs, as its path below ``net`` (``fib_tests.sh``,
    ``forwarding/router.sh``)."""
    found: list[str] = []
    for folder in FOLDERS:
        makefile = net / folder / "Makefile"
        if makefile.is_file():
            found += [str(Path(folder) / name) for name in makefile_scripts(makefile)]
    return found


def subsystem(name: str) -> str | None:
    """The subsystem marker of a script (its base name decides), or None."""
    base = Path(name).name
    return next(
        (mark for pattern, mark in SUBSYSTEM_PATTERNS if fnmatch.fnmatch(base, pattern)), None
    )


def uncontained(text: str) -> str:
    """Why a script (its text) cannot run contained on a host ("" if it can)."""
    for pattern, why in _UNCONTAINED:
        found = pattern.search(text)
        if found:
            line = text.count("\n", 0, found.start()) + 1
            return f"it {why} (line {line}: {found.group(0)!r})"
    return ""
