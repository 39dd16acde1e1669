# SPDX-License-Identifier: GPL-2.0-only
"""Combining shard directories into the matrix one machine would have written.

Why findings instead of a best-effort report: a CI run whose shard 3 never uploaded would
otherwise look green with a kernel missing. Every shard absent from its plan, every shard
directory given twice, every cell no directory holds and every cell two directories hold is a
finding; `merge` prints them, adds them to matrix.md and exits non-zero.
"""

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError
from kernels.matrix.results import TestResult
from kernels.matrix.runner import KernelRun
from kernels.matrix.shard import Piece, plan
from kernels.report import record
from kernels.report.model import Matrix, build
from kernels.vm.console import Crash


@dataclass(frozen=True)
class Merged:
    matrix: Matrix
    record: record.Record
    findings: list[str]


def _ordered_union(lists: Iterable[list[str]]) -> list[str]:
    return list(dict.fromkeys(item for items in lists for item in items))


def _unique_shards(dirs: list[Path]) -> tuple[list[tuple[Path, record.Record]], list[str]]:
    """The records to merge (a shard given twice counts once) and the shard-level findings."""
    seen: dict[tuple[tuple[str, ...], int], dict[int, Path]] = {}
    kept, findings = [], []
    for directory in dirs:
        rec = record.read(directory)
        shards = seen.setdefault((tuple(rec.kernels), rec.shard[1]), {})
        if rec.shard[0] in shards:
            first = shards[rec.shard[0]]
            findings.append(f"duplicate: shard {rec.shard[0]}/{rec.shard[1]} is in both {first} "
                            f"and {directory} (the second is ignored)")  # fmt: skip
            continue
        shards[rec.shard[0]] = directory
        kept.append((directory, rec))
    for (kernels, count), got in seen.items():
        for index, pieces in enumerate(plan(list(kernels), count), start=1):
            if index not in got:
                which = ", ".join(piece.label for piece in pieces)
                findings.append(f"missing: shard {index}/{count} ({which})")
    return kept, findings


def _combine(name: str, runs: list[KernelRun], findings: list[str]) -> KernelRun:
    """One column from a kernel's pieces: cells united, crashes kept, machine time added."""
    cells: dict[str, TestResult] = {}
    for run in runs:
        for cell in run.results:
            if cell.nodeid in cells:
                findings.append(f"duplicate: {cell.nodeid} on {name} (the first one is kept)")
            else:
                cells[cell.nodeid] = cell
    problems = [run.problem for run in runs if run.problem is not None]
    problem = problems[0] if len(problems) == 1 else None
    if len(problems) > 1:
        problem = Crash("; ".join(p.reason for p in problems),
                        "\n".join(p.excerpt for p in problems if p.excerpt))  # fmt: skip
    main = next((run for run in runs if run.kernel is not None), runs[0])
    boots = [run.boot_seconds for run in runs if run.boot_seconds is not None]
    return KernelRun(
        name=name, out_dir=main.out_dir, kernel=main.kernel, results=list(cells.values()),
        problem=problem, accel=main.accel, boot_seconds=max(boots) if boots else None,
        total_seconds=sum(run.total_seconds for run in runs),
    )  # fmt: skip


def merge(dirs: list[Path]) -> Merged:
    """The whole matrix from any set of result directories (shards, whole runs, merges)."""
    if not dirs:
        raise KernelsError("merge: name at least one result directory")
    kept, findings = _unique_shards(dirs)
    records = [rec for _, rec in kept]
    kernels = _ordered_union(rec.kernels for rec in records)
    collected = _ordered_union(rec.collected for rec in records)
    entries = [entry for rec in records for entry in rec.entries]
    runs, sources = [], {}
    for name in kernels:
        mine = [entry for entry in entries if entry.run.name == name]
        if mine:
            runs.append(_combine(name, [entry.run for entry in mine], findings))
            sources[name] = mine[0].source
    matrix = build(runs, collected)
    for run in runs:
        if absent := [nodeid for nodeid in matrix.rows if matrix.cell(nodeid, run.name) is None]:
            findings.append(f"missing: {len(absent)} cell(s) on {run.name}, e.g. {absent[0]}")
    digest = hashlib.sha256(" ".join(sorted(r.run_id for r in records)).encode()).hexdigest()
    merged = record.Record(
        run_id=digest[:12], started=min(rec.started for rec in records), arch=records[0].arch,
        shard=(1, 1), kernels=[run.name for run in runs], collected=collected,
        entries=[record.Entry(Piece(run.name), sources[run.name], record.cells_of(matrix, run))
                 for run in runs],
    )  # fmt: skip
    return Merged(matrix, merged, findings)
