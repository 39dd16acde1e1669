# SPDX-License-Identifier: GPL-2.0-only
"""Every output format of the matrix, in one registry: what a result directory holds and what
`scripts/matrix export` can make of one.

Why one registry: a run and `merge` write the same files (a merged directory must be
indistinguishable from a single machine's, and can itself be merged or exported again), and
`export` offers what this lists; a new format is a module of its own plus one line here.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from kernels.report import html, junit, kcidb, ktap, matrix_json, record, table
from kernels.report.model import Matrix

Writer = Callable[[Matrix, record.Record, Path], list[Path]]

# Written into every result directory, in this order.
WRITTEN: tuple[Writer, ...] = (
    table.write,  # matrix.md
    matrix_json.write,  # matrix.json
    html.write,  # matrix.html
    junit.write,  # junit-<kernel>.xml
    ktap.write,  # ktap-<kernel>.tap
    record.write,  # runs.json, what merge and export read back
)


class Export(NamedTuple):
    """A format made on demand from a result directory's record (`scripts/matrix export`):
    its default file name there, its JSON data given the address the directory is published
    at (or ""), and the summary of that data printed after writing it."""

    file: str
    data: Callable[[record.Record, str], dict[str, Any]]
    summary: Callable[[dict[str, Any]], str]


EXPORTS = {
    "kcidb": Export("kcidb.json", kcidb.export, kcidb.summary),
}


def publish(matrix: Matrix, rec: record.Record, out_dir: Path) -> list[Path]:
    """Every file of :data:`WRITTEN` in `out_dir` (created if need be); returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [path for write in WRITTEN for path in write(matrix, rec, out_dir)]
