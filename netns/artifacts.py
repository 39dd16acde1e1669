# SPDX-License-Identifier: GPL-2.0-only
"""Where a test's evidence (pcaps, nstat/ss snapshots) is written.

The pytest plugin points this at a per-test folder, kept when the test fails and removed
when it passes; outside pytest, files go to a per-process temporary folder. Library code
only ever asks :func:`new_path`, so it never needs to know which of the two it is in.
"""

import atexit
import itertools
import os
import re
import shutil
import tempfile
from pathlib import Path

_current: Path | None = None
_fallback: Path | None = None
_counter = itertools.count(1)


def set_current(folder: Path | None) -> None:
    """Direct new artifacts into *folder* (None: back to the temporary fallback)."""
    global _current
    _current = folder


def current() -> Path:
    global _fallback
    if _current is not None:
        _current.mkdir(parents=True, exist_ok=True)
        return _current
    if _fallback is None:
        _fallback = Path(tempfile.mkdtemp(prefix="netregress-"))
        atexit.register(shutil.rmtree, _fallback, ignore_errors=True)
    return _fallback


KEEP_PASSING_BYTES = 4 << 20


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except FileNotFoundError:
        return []


def drop_passing(folder: Path, keep_pcaps: bool) -> None:
    """A passing test's evidence goes; with *keep_pcaps* its pcaps and JSON (script
    timelines, counter snapshots) stay when small enough, for a cross-kernel trace diff.

    One directory read, then a stat per file kept: in a guest the folder is on the host's
    share, where every file-system call is a round trip, after every test."""
    found = _entries(folder) if keep_pcaps else []
    kept = [e for e in found if os.path.splitext(e.name)[1] in (".pcap", ".json")]
    if not kept or sum(e.stat().st_size for e in kept) > KEEP_PASSING_BYTES:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in found:
        if entry not in kept:
            shutil.rmtree(entry.path) if entry.is_dir() else os.unlink(entry.path)


def new_path(stem: str, suffix: str) -> Path:
    """A fresh file name in the current artifact folder, e.g. ``03-client-eth0.pcap``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)
    return current() / f"{next(_counter):02d}-{safe}{suffix}"
