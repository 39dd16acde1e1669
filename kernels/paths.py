# SPDX-License-Identifier: GPL-2.0-only
"""Where the kernel matrix keeps its files: one per-user cache, nothing else outside the output dir.

Why XDG: users run the matrix unprivileged-then-sudo or in CI; a predictable cache that survives
runs avoids re-downloading 20–40 MB kernels, and one root makes cleanup and reaping simple.
"""

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/netregress/kernels` (default `~/.cache/netregress/kernels`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "netregress" / "kernels"


def cache_dir(*parts: str) -> Path:
    """A sub-directory of the cache, created on first use."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing).

    Why: two matrix workers (or two concurrent runs) share the cache; apt's list directory and
    a half-extracted kernel must not be touched by both at once.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
