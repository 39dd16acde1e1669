# SPDX-License-Identifier: GPL-2.0-only
"""Which passing runs' pcaps a matrix keeps: only those a cross-kernel trace diff needs.

Why: the guests keep every passing test's pcaps (``--keep-passing-pcaps``, bounded per test)
because only after all kernels finished is it known which tests pass on one kernel and fail
on another. Then everything else goes, so a matrix folder stays the size of its failures.
"""

import shutil

from kernels.matrix.results import Outcome
from kernels.report.html import evidence_dir
from kernels.report.model import Matrix

PYTEST_OPTION = "--keep-passing-pcaps"


def prune(matrix: Matrix) -> int:
    """Delete passing cells' evidence in rows without a failure; returns folders removed."""
    removed = 0
    for nodeid in matrix.rows:
        cells = [(run, matrix.cell(nodeid, run.name)) for run in matrix.runs]
        if any(cell and cell.outcome == Outcome.FAIL for _, cell in cells):
            continue
        for run, cell in cells:
            folder = evidence_dir(run, nodeid)
            if cell and cell.outcome == Outcome.PASS and folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
    return removed
