"""`scripts/matrix`: run the suite (or a selection) on several kernels and print the matrix.

    scripts/matrix [--kernels A,B] [--jobs N] [--accel auto|kvm|tcg] [--output DIR] [pytest args]

Everything not an option of ours goes to pytest unchanged (paths, -k, -m …), in every guest.
Exit status: 0 when every cell is as expected (pass, skip, or a declared strict xfail), 1 when
any test failed or any kernel crashed, 2 for bad input, 130 when interrupted.
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType

from kernels import kept_pcaps, tools
from kernels.catalog import DEFAULT_CATALOG, KernelSpec, RunningKernel, load_catalog, select
from kernels.errors import KernelsError
from kernels.expectations import load_expectations
from kernels.paths import cache_root
from kernels.procs import Children, reap_leftovers
from kernels.progress import Board
from kernels.qemu import InitramfsLauncher
from kernels.report import build, render_text, write_outputs
from kernels.runner import KernelRun, RunOptions, run_kernel


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/matrix",
        allow_abbrev=False,  # "--time" or "--out" belong to pytest, not to us
        description="Run the netregress suite on several kernels (VMs) and print the matrix. "
        "Unknown arguments are passed to pytest (paths, -k EXPR, -m MARK …).",
    )
    parser.add_argument("--kernels", action="append", default=[], metavar="A,B",
                        help="kernel names from the catalog or bzImage paths (default: all "
                        "default kernels)")  # fmt: skip
    parser.add_argument("--jobs", "-j", type=int, default=0,
                        help="kernels at once (default: one per CPU)")
    parser.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto",
                        help="VM acceleration (auto: KVM only if a probe guest boots)")
    parser.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS",
                        help="per-kernel limit; a guest still running then is a crash")
    parser.add_argument("--output", type=Path, metavar="DIR",
                        help="where matrix.md, matrix.json, junit-<kernel>.xml and each "
                        "kernel's console go (default: a new folder under the cache)")
    parser.add_argument("--catalog", type=Path, default=DEFAULT_CATALOG, metavar="FILE",
                        help="the kernel catalog (default: kernels/matrix.toml)")
    parser.add_argument("--expectations", type=Path, metavar="FILE",
                        help="known failures (default: kernels/expectations.toml)")
    parser.add_argument("--list", action="store_true", help="list the catalog and exit")
    return parser


def _describe(spec: KernelSpec) -> str:
    fields = {k: str(v) for k, v in vars(spec).items() if k not in ("name", "default")}
    kind = type(spec).__name__.removesuffix("Kernel").lower()
    return f"{spec.name:16} {kind:8} " + " ".join(f"{k}={v}" for k, v in fields.items())


def _collect(pytest_args: list[str]) -> list[str]:
    """The host's view of the selection: matrix rows even for a kernel that dies at once."""
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    proc = subprocess.run([*argv, *pytest_args], capture_output=True, text=True)
    if proc.returncode == 4:
        detail = proc.stderr.strip() or proc.stdout.strip()
        raise KernelsError(f"pytest rejected the arguments: {detail}")
    return [line.strip() for line in proc.stdout.splitlines() if "::" in line]


def _jobs(wanted: int, kernels: int) -> int:
    """Two TCG guests saturate two cores; more only adds contention."""
    if wanted > 0:
        return min(wanted, kernels)
    return max(1, min(kernels, os.cpu_count() or 1))


def _say(message: str) -> None:
    print(f"matrix: {message}", file=sys.stderr, flush=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _summary(run: KernelRun) -> str:
    counts: dict[str, int] = {}
    for result in run.results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    text = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no results"
    return f"done: {text}" + (f"; {run.problem.reason}" if run.problem else "")


def run_matrix(args: argparse.Namespace, pytest_args: list[str]) -> int:
    catalog = load_catalog(args.catalog)
    if args.list:
        print("\n".join(_describe(spec) for spec in catalog.values()))
        return 0
    names = [name.strip() for item in args.kernels for name in item.split(",") if name.strip()]
    specs = select(catalog, names)
    if len({spec.name for spec in specs}) != len(specs):
        raise KernelsError("a kernel is named twice in --kernels")
    tools.require_root()
    if any(not isinstance(spec, RunningKernel) for spec in specs):
        tools.qemu(), tools.virtiofsd()
    if args.expectations is not None:
        load_expectations(args.expectations)  # bad file: fail now, not in every guest
    default_out = cache_root().parent / "matrix" / time.strftime("%Y%m%d-%H%M%S")
    out_dir = (args.output or default_out).resolve()
    collected = _collect(pytest_args)
    jobs = _jobs(args.jobs, len(specs))
    children = Children()
    launcher = InitramfsLauncher(children, smp=max(1, (os.cpu_count() or 1) // jobs))
    options = RunOptions(
        pytest_args=[*pytest_args, kept_pcaps.PYTEST_OPTION], accel=args.accel,
        timeout=args.timeout,
        expectations=args.expectations,
    )  # fmt: skip
    if reaped := reap_leftovers():
        _say(f"stopped {len(reaped)} leftover VM process(es) of a dead run")
    _say(f"{len(collected)} test(s) on {len(specs)} kernel(s), {jobs} at a time")
    board = Board([spec.name for spec in specs])

    def one(spec: KernelSpec) -> KernelRun:
        status = board.status_for(spec.name)
        run = run_kernel(spec, options, out_dir / spec.name, launcher, children, status)
        board.update(spec.name, _summary(run), final=True)
        return run

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    pool = ThreadPoolExecutor(jobs)
    try:
        with board:
            runs = list(pool.map(one, specs))
    finally:
        children.stop_all()  # first: workers blocked on a guest return once it is gone
        pool.shutdown(wait=True, cancel_futures=True)
    matrix = build(runs, collected)
    kept_pcaps.prune(matrix)
    written = write_outputs(matrix, out_dir)
    print(render_text(matrix))
    print(f"\nmatrix: wrote {', '.join(p.name for p in written)} in {out_dir}")
    return 1 if matrix.unexpected() else 0


def main(argv: list[str] | None = None) -> int:
    args, pytest_args = _parser().parse_known_args(argv)
    pytest_args = [arg for arg in pytest_args if arg != "--"]
    try:
        return run_matrix(args, pytest_args)
    except KernelsError as exc:
        print(f"matrix: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("matrix: interrupted; every VM was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
