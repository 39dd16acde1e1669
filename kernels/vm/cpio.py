# SPDX-License-Identifier: GPL-2.0-only
"""A minimal writer for the `newc` cpio format the kernel unpacks as an initramfs.

Why our own writer: it is ~30 lines, deterministic (fixed mtimes, so a cached initramfs keeps
its hash), and needs no `cpio` binary or fakeroot to get root-owned entries.
"""

import stat
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One archive member: a directory (data None, no target), a file, or a symlink."""

    path: str
    mode: int
    data: bytes = b""
    target: str | None = None


def _header(ino: int, mode: int, size: int, name: bytes) -> bytes:
    fields = [ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, len(name) + 1, 0]
    return b"070701" + b"".join(b"%08X" % value for value in fields)


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)


def archive(entries: list[Entry]) -> bytes:
    """The newc archive of `entries` followed by the TRAILER!!! record."""
    out = bytearray()
    for ino, entry in enumerate([*entries, Entry("TRAILER!!!", 0)], 1):
        if entry.target is not None:
            mode, body = stat.S_IFLNK | 0o777, entry.target.encode()
        elif entry.path != "TRAILER!!!" and stat.S_IFMT(entry.mode) == 0:
            mode, body = stat.S_IFREG | entry.mode, entry.data
        else:
            mode, body = entry.mode, entry.data
        name = entry.path.encode()
        head = _header(ino, mode, len(body), name) + name + b"\0"
        out += head + _pad(len(head)) + body + _pad(len(body))
    return bytes(out)


def directory(path: str) -> Entry:
    """A directory entry (mode 0755)."""
    return Entry(path, stat.S_IFDIR | 0o755)
