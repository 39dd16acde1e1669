# SPDX-License-Identifier: GPL-2.0-only
"""What changed between two Debian kernel packages, as their changelog says: every upstream
stable commit title (and Debian's own entries) of the range, sorted into subsystems.

Why the changelog and not git: the miner works from the two packages alone (no kernel git
tree of gigabytes), and Debian's `changelog.Debian.gz` lists, under each "New upstream
stable update: …/ChangeLog-6.12.108" link, the title of every commit that release took.
"""

import re
import subprocess
from dataclasses import dataclass

from kernels.errors import KernelsError
from kernels.mutation.areas import area_of_title

_STANZA = re.compile(r"^(\S+) \(([^)\s]+)\) [^;]*;")
_RELEASE = re.compile(r"^ {4}https?://\S*/ChangeLog-(\S+?)\s*$")
_ITEM = re.compile(r"^ {2}\* (.*)$")
_ENTRY = re.compile(r"^ {4}- (.*)$")
_MORE = re.compile(r"^ {4,}(\S.*)$")
_TRAILER = re.compile(r"^ -- ")
_BACKPORT = re.compile(r"~(?:deb|bpo)\d.*$")  # the rebuild of a newer suite's upload
_STABLE_UPDATE = "New upstream"


@dataclass(frozen=True)
class Entry:
    """One title; `release` is the upstream stable release that brought it (`6.12.108`), or
    the Debian version for Debian's own entries."""

    title: str
    release: str
    subsystem: str


def newer(version: str, than: str) -> bool:
    """Debian version order (`dpkg --compare-versions`), the one apt itself uses."""
    try:
        proc = subprocess.run(["dpkg", "--compare-versions", version, "gt", than])
    except OSError:
        raise KernelsError("dpkg is missing: the miner reads Debian packages") from None
    return proc.returncode == 0


def _stanzas(text: str) -> list[tuple[str, list[str]]]:
    """(version, body lines) per upload, newest first, as the file has them."""
    stanzas: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if head := _STANZA.match(line):
            stanzas.append((head.group(2), []))
        elif stanzas:
            stanzas[-1][1].append(line)
    return stanzas


def _entries(version: str, body: list[str]) -> list[tuple[str, str]]:
    """(title, release) of one upload: `- ` entries under a stable release's link, `* `
    items of Debian's own; wrapped lines joined."""
    found: list[list[str]] = []
    release = version
    current: list[str] | None = None
    for line in body:
        if _TRAILER.match(line):
            break
        if link := _RELEASE.match(line):
            release, current = link.group(1), None
        elif item := _ITEM.match(line):
            release, current = version, None
            if not item.group(1).startswith(_STABLE_UPDATE):
                current = [item.group(1), release]
                found.append(current)
        elif entry := _ENTRY.match(line):
            current = [entry.group(1), release]
            found.append(current)
        elif (more := _MORE.match(line)) and current is not None:
            current[0] += " " + more.group(1)
        elif not line.strip() or line.lstrip().startswith("["):
            release, current = version, None  # "[ Maintainer ]" starts Debian's own part
    return [(title, where) for title, where in found]


def range_entries(text: str, old: str, new: str) -> list[Entry]:
    """Every entry the uploads after `old` up to `new` brought, from `new`'s changelog.

    A `~deb12u1` upload is a rebuild of the newer suite's upload of the same version, which
    follows it in the file, so the walk stops at the first upload that is not newer than
    `old` once such a suffix is dropped from both: 6.12.107-1 (trixie) came in with
    6.12.107-1~deb12u1 and is not part of 6.12.107-1~deb12u1..6.12.111-1~deb12u1."""
    stanzas = _stanzas(text)
    versions = [version for version, _ in stanzas]
    if new not in versions:
        raise KernelsError(f"the changelog of {new} has no upload {new} (it starts at "
                           f"{versions[0] if versions else 'nothing'})")  # fmt: skip
    floor = _BACKPORT.sub("", old)
    entries: list[Entry] = []
    for version, body in stanzas[versions.index(new) :]:
        if not newer(_BACKPORT.sub("", version), floor):
            break
        entries += [Entry(title, release, area_of_title(title))
                    for title, release in _entries(version, body)]  # fmt: skip
    return entries
