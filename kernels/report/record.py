# SPDX-License-Identifier: GPL-2.0-only
"""A result directory's machine record (`runs.json`): every kernel run with all its cells.

Why besides matrix.json: matrix.json is the report for readers (no tracebacks, no durations,
timings as text); merging shards and exporting to KCIDB need everything a report is built from
(each cell's details and duration, each kernel's build, crash and timings), plus which slice of
which plan the directory holds, so `merge` can tell a missing shard from a duplicate one.
Kernel folders are stored relative to the record, so a CI artifact can be moved and still merge.
A kernel built from a git tree keeps its checkout (commit, remote, uncommitted changes): the
export names it, possibly on another machine than the one that built it.
"""

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kernels.acquire.catalog import KernelSpec
from kernels.acquire.kernel import BootableKernel, GitSource
from kernels.errors import KernelsError
from kernels.matrix.results import TestResult
from kernels.matrix.runner import KernelRun
from kernels.matrix.shard import Piece
from kernels.report.model import CONSOLE_ROW, Matrix
from kernels.vm.console import Crash

RECORD = "runs.json"
FORMAT = "netregress-matrix-record/1"


@dataclass(frozen=True)
class Entry:
    """One kernel piece: where it sits in the plan, what kernel it is, and its run (whose
    results are the finished cells, crashes already filled in)."""

    piece: Piece
    source: dict[str, str]
    run: KernelRun


@dataclass(frozen=True)
class Record:
    """What one result directory holds. `shard` is (I, N); `kernels` and `collected` describe
    the whole plan (every shard of one run has the same), `entries` this directory's share."""

    run_id: str
    started: str
    arch: str
    shard: tuple[int, int]
    kernels: list[str]
    collected: list[str]
    entries: list[Entry] = field(default_factory=list)


def describe(spec: KernelSpec) -> dict[str, str]:
    """The catalog entry as plain strings: kind plus its fields (KCIDB's config and tree)."""
    kind = type(spec).__name__.removesuffix("Kernel").lower()
    fields = {k: str(v) for k, v in vars(spec).items() if k not in ("name", "default")}
    return {"kind": kind, **fields}


def cells_of(matrix: Matrix, run: KernelRun) -> KernelRun:
    """`run` with its results replaced by its finished column (crashes filled in, no console
    row: that one follows from `problem`), which is what a record keeps."""
    cells = [c for nodeid in matrix.rows if nodeid != CONSOLE_ROW
             and (c := matrix.cell(nodeid, run.name))]  # fmt: skip
    return replace(run, results=cells)


def _run_json(run: KernelRun, base: Path) -> dict[str, Any]:
    kernel = run.kernel
    where = run.out_dir.relative_to(base) if run.out_dir.is_relative_to(base) else run.out_dir
    return {
        "name": run.name,
        "dir": str(where),
        "kernel": None if kernel is None else {
            "name": kernel.name, "release": kernel.release, "version": kernel.version,
            "image": str(kernel.image) if kernel.image else None,
            "git": asdict(kernel.git) if kernel.git else None,
        },
        "results": [asdict(result) for result in run.results],
        "problem": None if run.problem is None else asdict(run.problem),
        "accel": run.accel,
        "boot_seconds": run.boot_seconds,
        "total_seconds": run.total_seconds,
    }  # fmt: skip


def _run_from(data: dict[str, Any], base: Path) -> KernelRun:
    kernel = data["kernel"]
    return KernelRun(
        name=data["name"],
        out_dir=(base / data["dir"]).resolve(),
        kernel=None if kernel is None else BootableKernel(
            kernel["name"], kernel["release"], kernel["version"],
            Path(kernel["image"]) if kernel["image"] else None,
            git=GitSource(**kernel["git"]) if kernel.get("git") else None,
        ),
        results=[TestResult.from_dict(result) for result in data["results"]],
        problem=None if data["problem"] is None else Crash(**data["problem"]),
        accel=data["accel"],
        boot_seconds=data["boot_seconds"],
        total_seconds=data["total_seconds"],
    )  # fmt: skip


def write(matrix: Matrix, record: Record, out_dir: Path) -> list[Path]:
    """runs.json (the record holds the matrix's cells already: `cells_of`)."""
    path = out_dir / RECORD
    data = {
        "format": FORMAT,
        "run_id": record.run_id,
        "started": record.started,
        "arch": record.arch,
        "shard": list(record.shard),
        "kernels": record.kernels,
        "collected": record.collected,
        "entries": [
            {"piece": asdict(e.piece), "source": e.source, "run": _run_json(e.run, out_dir)}
            for e in record.entries
        ],
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    return [path]


def read(out_dir: Path) -> Record:
    """The record of a result directory, or a clear error naming the directory."""
    path = out_dir / RECORD
    try:
        data = json.loads(path.read_text())
    except OSError:
        raise KernelsError(f"{out_dir}: not a matrix result directory (no {RECORD})") from None
    except ValueError as exc:
        raise KernelsError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise KernelsError(f"{path}: not a {FORMAT} record")
    try:
        base = path.parent
        return Record(
            run_id=data["run_id"],
            started=data["started"],
            arch=data["arch"],
            shard=(int(data["shard"][0]), int(data["shard"][1])),
            kernels=list(data["kernels"]),
            collected=list(data["collected"]),
            entries=[
                Entry(Piece(**e["piece"]), dict(e["source"]), _run_from(e["run"], base))
                for e in data["entries"]
            ],
        )
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise KernelsError(f"{path}: malformed record ({exc!r})") from None
