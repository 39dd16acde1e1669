# SPDX-License-Identifier: GPL-2.0-only
"""matrix.json: the matrix for scripts, the report's words without the tracebacks.

Why besides runs.json: a dashboard wants each cell's outcome and one-line why, each kernel's
line as the tables show it, and the count of unexpected cells, not the record's every detail.
A packetdrill item's timing record comes along as the guest wrote it.
"""

import json
from pathlib import Path

from kernels.report import grid
from kernels.report.model import Matrix
from kernels.report.record import Record

FILE = "matrix.json"


def to_json(matrix: Matrix) -> dict[str, object]:
    kernels = [
        dict(zip(grid.KERNEL_HEADER, grid.kernel_line(run), strict=True)) for run in matrix.runs
    ]
    for entry, run in zip(kernels, matrix.runs, strict=True):
        entry["console"] = str(run.out_dir / "console.log")
        entry["crash_excerpt"] = run.problem.excerpt if run.problem else ""
    tests = {
        nodeid: {
            run.name: {"outcome": c.outcome, "message": c.message}
            | ({"timing": json.loads(record.to_json())} if (record := c.timing()) else {})
            for run in matrix.runs
            if (c := matrix.cell(nodeid, run.name))
        }
        for nodeid in matrix.rows
    }
    return {"kernels": kernels, "tests": tests, "unexpected": len(matrix.unexpected())}


def write(matrix: Matrix, rec: Record, out_dir: Path) -> list[Path]:
    """matrix.json."""
    path = out_dir / FILE
    path.write_text(json.dumps(to_json(matrix), indent=2) + "\n")
    return [path]
