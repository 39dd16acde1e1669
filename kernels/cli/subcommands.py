# SPDX-License-Identifier: GPL-2.0-only
"""`scripts/matrix merge | ci | export`: the matrix's subcommands, argument parsing and printing
only (the work is in merge.py, ci_workflow.py and the formats kernels/report/outputs.py lists).

    scripts/matrix merge [--output DIR] SHARD_DIR...
    scripts/matrix ci github|gitlab [--shards N] [--kernels A,B] [--catalog FILE] [--output FILE]
                                    [SELECTION...]
    scripts/matrix export FORMAT [--output FILE] [--url URL] DIR      (FORMAT: kcidb)

Exit status as for a run: 0 all as expected, 1 a failure, a crash or (merge) a missing or
duplicate shard or cell, 2 bad input; errors are KernelsError, printed by kernels.cli.matrix.
"""

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from kernels.acquire.catalog import DEFAULT_CATALOG, load_catalog, select
from kernels.errors import KernelsError
from kernels.matrix.ci_workflow import ENGINES
from kernels.paths import cache_root
from kernels.report import record
from kernels.report.merge import merge
from kernels.report.outputs import EXPORTS, publish
from kernels.report.table import render_text

DEFAULT_SELECTION = ["tests/cases"]


def _merge(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/matrix merge",
        description="Combine shard directories (scripts/matrix --shard I/N --output DIR) into "
        "the matrix one machine would have written.",
    )
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    parser.add_argument("--output", type=Path, metavar="DIR",
                        help="where the merged matrix goes (default: a new folder under the "
                        "cache)")  # fmt: skip
    args = parser.parse_args(argv)
    merged = merge(args.dirs)
    default = cache_root().parent / "matrix" / time.strftime("%Y%m%d-%H%M%S-merged")
    out_dir = (args.output or default).resolve()
    written = publish(merged.matrix, merged.record, out_dir)
    if merged.findings:
        with (out_dir / "matrix.md").open("a") as markdown:
            markdown.write("\n## Merge findings\n\n")
            markdown.writelines(f"- {finding}\n" for finding in merged.findings)
    print(render_text(merged.matrix))
    for finding in merged.findings:
        print(f"matrix merge: {finding}", file=sys.stderr)
    print(f"\nmatrix: wrote {', '.join(p.name for p in written)} in {out_dir}")
    return 1 if merged.findings or merged.matrix.unexpected() else 0


def _ci(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/matrix ci",
        description="Write a CI workflow that runs the matrix as one job per shard and merges "
        "them. Arguments after the options are the pytest selection (default: tests/cases).",
    )
    parser.add_argument("engine", choices=sorted(ENGINES))
    parser.add_argument(
        "--shards",
        type=int,
        default=0,
        metavar="N",
        help="jobs (default: one per default kernel of the catalog)",
    )
    parser.add_argument("--kernels", metavar="A,B",
                        help="catalog names (default: the catalog's default kernels)")  # fmt: skip
    parser.add_argument("--catalog", type=Path, default=DEFAULT_CATALOG, metavar="FILE")
    parser.add_argument("--output", type=Path, metavar="FILE",
                        help="write here instead of standard output")  # fmt: skip
    args, selection = parser.parse_known_args(argv)
    catalog = load_catalog(args.catalog)
    wanted = [name.strip() for name in (args.kernels or "").split(",") if name.strip()]
    unknown = [name for name in wanted if name not in catalog]
    if unknown:
        # A runner has none of this machine's kernel images: only catalog names travel.
        raise KernelsError(f"--kernels: {', '.join(unknown)} not in {args.catalog} "
                           f"(known: {', '.join(catalog)})")  # fmt: skip
    kernels = [spec.name for spec in select(catalog, wanted)]
    if not kernels:
        raise KernelsError(f"{args.catalog}: no default kernel to put in a workflow")
    if args.shards < 0:
        raise KernelsError("--shards must be a positive number")
    selection = [arg for arg in selection if arg != "--"] or DEFAULT_SELECTION
    text = ENGINES[args.engine](kernels, args.shards or len(kernels), selection)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
    return 0


def _export(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/matrix export",
        description="Export a matrix result directory (a run or a merge) for other systems.",
    )
    parser.add_argument("format", choices=list(EXPORTS))
    parser.add_argument("dir", type=Path, metavar="DIR")
    defaults = ", ".join(f"DIR/{export.file} ({name})" for name, export in EXPORTS.items())
    parser.add_argument("--output", type=Path, metavar="FILE",
                        help=f"default: {defaults}")  # fmt: skip
    parser.add_argument("--url", default="", metavar="URL",
                        help="where DIR is published (e.g. a CI job's artifacts): each test "
                        "links its kernel's KTAP file and matrix.html there")  # fmt: skip
    args = parser.parse_args(argv)
    export = EXPORTS[args.format]
    data = export.data(record.read(args.dir), args.url)
    out = args.output or args.dir / export.file
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"matrix: wrote {out} ({export.summary(data)})")
    return 0


class Command(NamedTuple):
    """A subcommand: what `scripts/matrix --help` says of it, and its body (given its words)."""

    summary: str
    run: Callable[[list[str]], int]


COMMANDS = {
    "merge": Command(
        "combine shard directories (--shard I/N --output DIR) into one matrix", _merge
    ),
    "ci": Command("write a CI workflow (github or gitlab) that runs one job per shard", _ci),
    "export": Command(
        f"export a result directory for other systems ({', '.join(EXPORTS)})", _export
    ),
}
