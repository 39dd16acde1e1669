# SPDX-License-Identifier: GPL-2.0-only
"""A Debian kernel package's changelog: which upstream commits each build brought.

Why this file: Debian's kernel team lists, for every upstream stable update a build takes,
the stable release (its ``ChangeLog-6.1.191`` link) and the title of every commit in it, and
the image package ships that changelog (``usr/share/doc/linux-image-*/changelog.gz``). So the
commits between two packaged kernels are known without a kernel tree: the entries the newer
build's changelog has and the older one's has not.

The shape read (indentation is Debian's, two spaces per level)::

    linux (6.1.192-1) bookworm-security; urgency=high

      * New upstream stable update:
        https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.191
        - tcp: challenge ACK for non-exact RST in SYN-RECEIVED (CVE-2026-68118)
        - a title that goes on
          over a second line

      [ A Maintainer ]
      * a change of Debian's own

     -- A Maintainer <someone@debian.org>  Mon, 16 Nov 2026 11:17:40 +0100
"""

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError

_HEADER = re.compile(r"^(?P<source>[a-z0-9][a-z0-9.+-]*) \((?P<version>[^)\s]+)\) (?P<dist>[^;]+);")
_STABLE_LINK = re.compile(r"/ChangeLog-(?P<release>\d+\.\d+(?:\.\d+)?)\s*$")
_STABLE_ITEM = "New upstream stable update"
_SIGNS = re.compile(r"^Sign kernel from (?P<source>linux\S*) (?P<version>\S+)$")


@dataclass(frozen=True)
class Change:
    """One commit title, and the upstream stable release it came with (None: a change of
    Debian's own, such as a backported fix or a packaging change)."""

    title: str
    release: str | None


@dataclass(frozen=True)
class Entry:
    """One changelog entry: the source package and version it describes, and its changes."""

    source: str
    version: str
    changes: tuple[Change, ...]

    @property
    def build(self) -> tuple[str, str]:
        """The kernel build the entry describes: a signing package's entry is the build it
        signs (of `linux`, or of a backport's source such as bookworm's `linux-6.12`)."""
        first = self.changes[0].title if self.changes else ""
        signed = _SIGNS.match(first)
        return (signed["source"], signed["version"]) if signed else (self.source, self.version)

    @property
    def releases(self) -> tuple[str, ...]:
        """The upstream stable releases this entry took, in its order."""
        seen = dict.fromkeys(c.release for c in self.changes if c.release is not None)
        return tuple(seen)


def parse(text: str) -> list[Entry]:
    """Every entry of a changelog, newest first (the file's order)."""
    entries: list[Entry] = []
    header: re.Match[str] | None = None
    changes: list[Change] = []
    in_stable, release = False, None

    def close() -> None:
        if header is not None:
            entries.append(Entry(header["source"], header["version"], tuple(changes)))

    for line in text.splitlines():
        if (match := _HEADER.match(line)) is not None:
            close()
            header, changes, in_stable, release = match, [], False, None
            continue
        body = line.strip()
        if header is None or not body or line.startswith(" -- "):
            continue
        # Levels by indentation, not by bullet: a sub-item is now and then bulleted `*`.
        top = len(line) - len(line.lstrip()) <= 2
        if (link := _STABLE_LINK.search(body)) is not None:
            release = link["release"] if in_stable else release
        elif top and body.startswith("* "):
            in_stable, release = body[2:].startswith(_STABLE_ITEM), None
            if not in_stable:
                changes.append(Change(body[2:], None))
        elif top and body.startswith("[ ") and body.endswith(" ]"):
            in_stable, release = False, None  # the next maintainer's own changes follow
        elif not top and body.startswith(("- ", "* ")):
            changes.append(Change(body[2:], release if in_stable else None))
        elif changes:
            last = changes[-1]
            changes[-1] = Change(f"{last.title} {body}", last.release)
    close()
    return entries


def newer_than(newer: list[Entry], older: list[Entry]) -> list[Entry]:
    """The entries of `newer`'s changelog that `older`'s lacks: what the newer build brought.

    Why by identity and not by comparing versions: the signed image's changelog opens with an
    entry of the signing package (``linux-signed-amd64 (6.1.190+1)``, "Sign kernel from linux
    6.1.190-1") that holds the kernel's own changes of that build, which a later build's
    changelog lists as ``linux (6.1.190-1)``; both are the same build of `linux`."""
    known = {entry.build for entry in older}
    return [entry for entry in newer if entry.build not in known]


def since_release(entries: list[Entry], upstream: tuple[int, ...]) -> list[Entry]:
    """The entries that took a stable release after `upstream`: what a newer build brought
    when the older build's changelog is not at hand (Debian's own changes at the same upstream
    release are then not told apart)."""

    def after(release: str) -> bool:
        return tuple(int(part) for part in release.split(".")) > upstream

    return [entry for entry in entries if any(after(release) for release in entry.releases)]


def find_changelog(tree: Path) -> Path | None:
    """The image package's changelog in the tree a kernel's packages were unpacked into, or
    None (none shipped)."""
    docs = tree / "usr/share/doc"
    found = sorted(docs.glob("linux-image-*/changelog*.gz")) or sorted(
        docs.glob("linux-*/changelog*.gz")
    )
    return found[0] if found else None


def read(path: Path) -> list[Entry]:
    """Parse a (gzipped) changelog file."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise KernelsError(f"cannot read the changelog {path}: {exc}") from None
    return parse(raw.decode("utf-8", "replace"))
