# SPDX-License-Identifier: GPL-2.0-only
"""`python -m kernels.acquire.from_source`: build a kernel the matrix can boot (what
scripts/build-kernel runs).

Why a separate entry point from the matrix: a build takes tens of minutes cold; users build
once (and again after each change), then boot the result many times by path.
"""

import argparse
import os
import sys
from pathlib import Path

from kernels.acquire.from_source.builder import BuildRequest, build
from kernels.acquire.from_source.make import elapsed
from kernels.acquire.from_source.source import debian_source, git_tree
from netregress.errors import run_cli


def _status(message: str) -> None:
    print(f"build-kernel: {message}", file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    """The command line; shared with scripts/bisect, which builds the same way."""
    cli = argparse.ArgumentParser(
        prog="scripts/build-kernel",
        description="Build a kernel from source (out of tree, incremental, everything the suite "
        "needs built in) into a directory the matrix boots: bzImage + lib/modules/<release>.",
    )
    src = cli.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--debian", metavar="PACKAGE", help="a Debian source package, e.g. linux-source-6.1"
    )
    src.add_argument(
        "--tree", type=Path, metavar="DIR", help="a kernel source tree (e.g. a git checkout)"
    )
    cli.add_argument(
        "--patch",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="apply this patch first (repeatable; --debian sources only)",
    )
    cli.add_argument(
        "--config",
        type=Path,
        action="append",
        default=[],
        metavar="FRAGMENT",
        help="an extra config fragment merged after kernels/configs/netregress.config",
    )
    cli.add_argument("--name", help="result name (default: the source id plus patch names)")
    cli.add_argument("--out", type=Path, metavar="DIR", help="result dir (default: in the cache)")
    cli.add_argument(
        "-j", "--jobs", type=int, default=os.cpu_count() or 1, help="make -j (default: all CPUs)"
    )
    return cli  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_cli(
        "build-kernel",
        lambda: _build(args),
        interrupted="interrupted (the next build continues where this one stopped)",
    )


def _build(args: argparse.Namespace) -> int:
    source = debian_source(args.debian, _status) if args.debian else git_tree(args.tree)
    request = BuildRequest(
        source=source,
        patches=tuple(args.patch),
        fragments=tuple(args.config),
        name=args.name,
        out=args.out,
        jobs=args.jobs,
    )
    result = build(request, _status)
    print(f"built {result.name} ({result.release}) in {elapsed(result.seconds)}")
    print(f"  image:   {result.image}")
    print(f"  modules: {result.modules}")
    print(
        f"  boot it: scripts/matrix --kernels {result.image}   or   pytest --kernel {result.image}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
