# SPDX-License-Identifier: GPL-2.0-only
"""scripts/soak: run the suite N times and count every test's verdicts — the flake figure.

Why a separate runner and not `pytest --count`: a flake is a property of whole runs on a
machine under some load (workers competing, namespaces built and torn down, a guest booting),
so each repetition is a fresh `pytest` process (or a fresh matrix), exactly as a user runs it.
A test whose verdict differs between runs is flagged; the load of the machine during each run
(load average before/after) is recorded next to the figure, since a figure without its load
says little.

    scripts/soak --runs 20 [--note "idle"] [pytest selection …]       host suite
    scripts/soak --runs 3 --matrix [--kernels A,B] [selection …]       the VM matrix

As a normal user the host suite runs rootless, as scripts/netregress does: each run in a user +
network + mount namespace of its own (netns/rootless.py); the matrix needs root (VMs).

Exit status: 0 when every test gave the same verdict in every run and none failed, 1 when a
verdict varied or a test failed, 2 on bad usage.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kernels import tools
from kernels.errors import KernelsError
from kernels.matrix import reportlog
from kernels.matrix.results import UNEXPECTED, Outcome
from kernels.paths import cache_root
from netns import rootless
from netregress import process
from netregress.errors import run_cli

OUTCOMES = tuple(Outcome)  # the table's columns, in the enum's order
DEFAULT_SELECTION = ["tests/cases"]


@dataclass
class Run:
    """One repetition: its exit status, wall time and the machine's load around it."""

    number: int
    exit_status: int
    seconds: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


@dataclass
class Soak:
    """Verdict counts per test (a matrix test is `nodeid @ kernel`) over all runs."""

    runs: list[Run] = field(default_factory=list)
    counts: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, key: str, outcome: str) -> None:
        self.counts.setdefault(key, Counter())[outcome] += 1

    def varied(self) -> list[str]:
        """Tests with more than one verdict, or missing from some run (a run lost them)."""
        return sorted(
            k for k, c in self.counts.items() if len(c) > 1 or sum(c.values()) != len(self.runs)
        )

    def failed(self) -> list[str]:
        return sorted(k for k, c in self.counts.items() if any(c[o] for o in UNEXPECTED))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/soak",
        description=__doc__.split("\n\n")[0],
        epilog="Unknown arguments are passed to pytest (paths, -k EXPR, …); default: tests/cases.",
    )
    parser.add_argument(
        "--runs", type=int, required=True, metavar="N", help="how many times to run the selection"
    )
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="run the VM matrix each time instead of the host suite",
    )
    parser.add_argument("--kernels", metavar="A,B", help="with --matrix: which kernels")
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        metavar="N",
        help="host suite: pytest-xdist workers (default 2, as scripts/netregress)",
    )
    parser.add_argument(
        "--note",
        default="",
        help="the load condition, recorded in the JSON "
        "(e.g. 'idle', 'two busy loops', 'kernel build')",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="where soak.json, soak.txt and each run's files go",
    )
    return parser


def _load() -> tuple[float, float, float]:
    return os.getloadavg()


def _rootless() -> bool:
    """A normal user's host runs go through netns.rootless, as scripts/netregress's do."""
    return os.geteuid() != 0


def _host_run(out: Path, workers: int, selection: list[str]) -> tuple[int, list[tuple[str, str]]]:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
            *reportlog.pytest_args(str(out)), *(["-n", str(workers)] if workers > 0 else []),
            *selection]  # fmt: skip
    if _rootless():
        argv = rootless.wrap(argv)  # a fresh user namespace of its own per run
    with (out / "pytest.log").open("wb") as log:
        status = process.run(argv, stdout=log, stderr=subprocess.STDOUT).returncode
    results = reportlog.read(out)
    if not results.complete:
        raise KernelsError(f"pytest did not finish (exit {status}): see {out / 'pytest.log'}")
    return status, [(r.nodeid, r.outcome) for r in results.results()]


def _matrix_run(
    out: Path, kernels: str | None, selection: list[str]
) -> tuple[int, list[tuple[str, str]]]:
    argv = [
        sys.executable,
        "-m",
        "kernels.cli.matrix",
        "--output",
        str(out),
        *(["--kernels", kernels] if kernels else []),
        *selection,
    ]
    with (out / "matrix.log").open("wb") as log:
        status = process.run(argv, stdout=log, stderr=subprocess.STDOUT).returncode
    try:
        tests = json.loads((out / "matrix.json").read_text())["tests"]
    except (OSError, ValueError, KeyError):
        raise KernelsError(
            f"the matrix wrote no results (exit {status}): see {out / 'matrix.log'}"
        ) from None
    return status, [
        (f"{nodeid} @ {kernel}", cell["outcome"])
        for nodeid, cells in tests.items()
        for kernel, cell in cells.items()
    ]


def render(soak: Soak) -> str:
    """The table: varied tests first, then failures, then the rest."""
    varied, failed = set(soak.varied()), set(soak.failed())
    order = sorted(soak.counts, key=lambda k: (k not in varied, k not in failed, k))
    header = ["test", *OUTCOMES, "flag"]
    rows = [
        [
            key,
            *(str(soak.counts[key][o]) for o in OUTCOMES),
            "VARIED" if key in varied else ("FAILED" if key in failed else ""),
        ]
        for key in order
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    loads = ", ".join(f"{r.load_before[0]:.1f}→{r.load_after[0]:.1f}" for r in soak.runs)
    lines += [
        "",
        f"{len(soak.runs)} run(s), {len(soak.counts)} test(s): "
        f"{len(varied)} varied, {len(failed)} failed at least once; "
        f"load average (1 min) before→after each run: {loads}",
    ]
    return "\n".join(lines)


def to_json(soak: Soak, args: argparse.Namespace, selection: list[str]) -> dict[str, object]:
    return {
        "mode": "matrix" if args.matrix else "host",
        "selection": selection,
        "note": args.note,
        "cpus": os.cpu_count(),
        "runs": [vars(r) for r in soak.runs],
        "tests": {k: dict(c) for k, c in sorted(soak.counts.items())},
        "varied": soak.varied(),
        "failed": soak.failed(),
    }


def soak(args: argparse.Namespace, selection: list[str]) -> int:
    if args.runs < 1:
        raise KernelsError("--runs must be at least 1")
    if args.kernels and not args.matrix:
        raise KernelsError("--kernels needs --matrix")
    if args.matrix:
        tools.require_root()
    elif _rootless() and (problem := rootless.userns_problem()) is not None:
        raise KernelsError(f"the suite needs root or a user namespace of its own: {problem}")
    default_out = cache_root().parent / "soak" / time.strftime("%Y%m%d-%H%M%S")
    out_dir = (args.output or default_out).resolve()
    result = Soak()
    for number in range(1, args.runs + 1):
        run_dir = out_dir / f"run-{number:03d}"
        run_dir.mkdir(parents=True, exist_ok=True)
        before, start = _load(), time.monotonic()
        if args.matrix:
            status, verdicts = _matrix_run(run_dir, args.kernels, selection)
        else:
            status, verdicts = _host_run(run_dir, args.workers, selection)
        result.runs.append(Run(number, status, round(time.monotonic() - start, 1), before, _load()))
        for key, outcome in verdicts:
            result.add(key, outcome)
        bad = sum(o in UNEXPECTED for _, o in verdicts)
        print(
            f"soak: run {number}/{args.runs}: {len(verdicts)} results, {bad} failed, "
            f"{result.runs[-1].seconds:.0f} s, load {before[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )
    table = render(result)
    (out_dir / "soak.txt").write_text(table + "\n")
    (out_dir / "soak.json").write_text(
        json.dumps(to_json(result, args, selection), indent=2) + "\n"
    )
    print(table)
    print(f"\nsoak: wrote soak.txt, soak.json in {out_dir}")
    return 1 if result.varied() or result.failed() else 0


def main(argv: list[str] | None = None) -> int:
    args, selection = _parser().parse_known_args(argv)
    selection = [a for a in selection if a != "--"] or DEFAULT_SELECTION
    return run_cli("soak", lambda: soak(args, selection))


if __name__ == "__main__":
    sys.exit(main())
