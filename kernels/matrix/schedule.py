"""The order the matrix starts kernels in: the slowest first, by what the last run took.

Why: the matrix runs a few kernels at a time (two on two cores). Started in catalog order, a
slow guest that starts last runs alone at the end while a core idles; longest first keeps
both busy until the end (the classic longest-processing-time rule). The running kernel's
column does not queue with the guests: it starts at once on the host (kernels/cli/matrix.py).
Each run's per-kernel seconds are kept in the cache; a kernel never timed counts as slowest
(a fresh source build may be). Only the start order changes: columns and reports keep the
plan's order.
"""

import json
from pathlib import Path

from kernels.matrix.shard import Piece
from kernels.paths import cache_dir, locked

FILE = "durations.json"


def _path() -> Path:
    return cache_dir() / FILE


def _known() -> dict[str, float]:
    try:
        data = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def slowest_first(pieces: list[Piece]) -> list[Piece]:
    """`pieces` by the last known duration of their kernel, longest (or unknown) first."""
    known = _known()
    return sorted(pieces, key=lambda piece: -known.get(piece.kernel, float("inf")))


def remember(seconds: dict[str, float]) -> None:
    """Keep this run's seconds per kernel (whole kernels only: a slice is not comparable)."""
    with locked(_path().with_name(FILE + ".lock")):
        known = _known()
        known.update(seconds)
        tmp = _path().with_name(FILE + ".tmp")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
        tmp.replace(_path())
