# SPDX-License-Identifier: GPL-2.0-only
"""Every file a matrix result directory holds, written the same way by a run and by `merge`.

Why one function: a merged directory must be indistinguishable from a single machine's
(same reports, same per-kernel KTAP, a record that can itself be merged or exported again).
"""

from pathlib import Path

from kernels.report import junit, ktap, record
from kernels.report.table import Matrix, write_outputs


def publish(matrix: Matrix, rec: record.Record, out_dir: Path) -> list[Path]:
    """matrix.md, matrix.json, matrix.html, junit-<kernel>.xml, ktap-<kernel>.tap and
    runs.json."""
    written = write_outputs(matrix, out_dir)
    written += junit.write_matrix(matrix, out_dir, rec.started)
    written += ktap.write_matrix(matrix, out_dir)
    written.append(record.write(rec, out_dir))
    return written
