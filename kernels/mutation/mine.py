# SPDX-License-Identifier: GPL-2.0-only
"""`scripts/mutants mine PACKAGE OLD NEW`: the kernel's own stable fixes between two Debian
source packages, as candidate mutants a person confirms.

Why: a curated mutant is a guess at a regression; a stable fix reverted is a regression that
happened. The miner fetches both packages (kernels/mutation/archive.py), diffs the paths the
suite covers, groups the hunks by function (hunks.py), lists the changelog's titles of the
range per subsystem (changelog.py) and writes one reversed-hunk patch per function with the
head of a mutant (candidates.py), checked to apply to NEW.
"""

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from kernels.errors import KernelsError
from kernels.mutation import archive
from kernels.mutation.areas import DEFAULT_PATHS, NAMES, OTHER, area_of_file, matches
from kernels.mutation.candidates import Range, file_name, render
from kernels.mutation.changelog import Entry, newer, range_entries
from kernels.mutation.hunks import Group, check_applies, groups, parse, patch_text, run_diff


def _say(message: str) -> None:
    print(f"mutants mine: {message}", file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="scripts/mutants mine",
        description="Candidate mutants from real stable fixes: fetch two versions of a Debian "
        "linux-source package (kept in ~/.cache/netregress/kernels/mined), diff the paths the "
        "suite covers, and write one reverted-hunk patch per changed function, headed like a "
        "mutant, with the range's changelog titles of its subsystem proposed for its Upstream: "
        "line. A person confirms each; scripts/mutants then runs it.",
        epilog="Example: scripts/mutants mine linux-source-6.12 6.12.107-1~deb12u1 "
        "6.12.111-1~deb12u1 (apt-cache madison linux-source-6.12 lists the versions served).",
    )
    cli.add_argument("package", metavar="PACKAGE", help="e.g. linux-source-6.12")
    cli.add_argument("old", metavar="OLD", help="the older version (Debian's, as apt names it)")
    cli.add_argument("new", metavar="NEW", help="the newer version")
    cli.add_argument(
        "--paths", nargs="+", action="extend", default=[], metavar="GLOB",
        help=f"paths in the tree to compare, a directory meaning all below it (default: "
        f"{' '.join(DEFAULT_PATHS)})",
    )  # fmt: skip
    cli.add_argument(
        "--output", type=Path, metavar="DIR",
        help="where the candidates and summary.md go (default: ./mined-OLD..NEW); a candidate "
        "file already there is kept as it is (it may hold a person's confirmation)",
    )  # fmt: skip
    return cli


def _unmatched(patterns: tuple[str, ...], files: set[str]) -> list[str]:
    """The paths a user named that match no file (the defaults name paths some kernels lack,
    e.g. drivers/net/vxlan before 6.0)."""
    return [p for p in patterns if not any(matches(path, p) for path in files)]


def _write(found: list[Group], mined: Range, entries: list[Entry], new_tree: Path,
           out: Path) -> tuple[list[Path], int]:  # fmt: skip
    """One candidate per group, each checked to apply to NEW first; (files, how many of
    them were already there and kept)."""
    out.mkdir(parents=True, exist_ok=True)
    numbers: Counter[str] = Counter()
    paths, kept = [], 0
    for group in found:
        numbers[group.subsystem] += 1
        path = out / file_name(group, numbers[group.subsystem])
        check_applies(patch_text(group.file), new_tree, path.name)
        if path.exists():
            kept += 1
        else:
            path.write_text(render(group, mined, entries), errors="surrogateescape")
        paths.append(path)
    return paths, kept


def summary(found: list[Group], entries: list[Entry], covered: list[str]) -> str:
    """The table (per subsystem: files, functions, hunks, titles), then each subsystem's
    titles: what a person reads before opening the candidates."""
    rows = [("subsystem", "files", "functions", "hunks", "titles")]
    for name in covered:
        mine = [group for group in found if group.subsystem == name]
        titles = sum(entry.subsystem == name for entry in entries)
        rows.append((name, str(len({g.path for g in mine})), str(len(mine)),
                     str(sum(len(g.hunks) for g in mine)), str(titles)))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    others = sum(entry.subsystem not in covered for entry in entries)
    lines += ["", f"{len(entries)} changelog titles in the range, {others} of them outside "
              "these subsystems."]  # fmt: skip
    for name in covered:
        own = [entry for entry in entries if entry.subsystem == name]
        if own:
            lines += ["", f"{name}:", *(f"  {e.release:>10}  {e.title}" for e in own)]
    return "\n".join(lines) + "\n"


def mine(args: argparse.Namespace) -> int:
    archive.check_package(args.package)
    patterns = tuple(archive.check_pattern(p) for p in args.paths) or DEFAULT_PATHS
    if args.old == args.new or not newer(args.new, args.old):
        raise KernelsError(f"NEW ({args.new}) must be a later version than OLD ({args.old})")
    start = time.monotonic()
    old = archive.fetch(args.package, args.old, patterns, _say)
    new = archive.fetch(args.package, args.new, patterns, _say)
    files = set(old.files) | set(new.files)
    if missing := _unmatched(tuple(args.paths), files):
        raise KernelsError(f"--paths {' '.join(missing)}: no such file in {args.package} "
                           f"{args.old} or {args.new} (paths are relative to the top of the "
                           "kernel tree, e.g. net/ipv4 or net/ipv4/tcp*.c)")  # fmt: skip
    _say(f"diffing {len(files)} files")
    found = groups(parse(run_diff(new.tree, old.tree)))
    entries = range_entries(new.changelog, args.old, args.new)
    present = {area_of_file(path) for path in files}
    covered = [name for name in (*NAMES, OTHER) if name in present]
    mined = Range(args.package, args.old, args.new)
    out = args.output or Path(f"mined-{mined.text}")
    written, kept = _write(found, mined, entries, new.tree, out)
    text = summary(found, entries, covered)
    (out / "summary.md").write_text(f"# {args.package} {mined.text}\n\n```\n{text}```\n")
    print(text)
    print(f"{len(written)} candidate(s) in {out}, each applying to {args.new}"
          + (f" ({kept} already there, kept)" if kept else "")
          + f"; summary in {out / 'summary.md'}; {time.monotonic() - start:.0f} s")  # fmt: skip
    return 0
