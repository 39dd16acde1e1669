# SPDX-License-Identifier: GPL-2.0-only
"""`scripts/matrix`: run the suite (or a selection) on several kernels and print the matrix.

    scripts/matrix [--kernels A,B] [--shard I/N] [--jobs N] [--accel auto|kvm|tcg]
                   [--output DIR] [pytest args]
    scripts/matrix merge|ci|export …      (kernels/cli/subcommands.py)

Everything not an option of ours goes to pytest unchanged (paths, -k, -m …), in every guest.
Exit status: 0 when every cell is as expected (pass, skip, or a declared strict xfail), 1 when
any test failed or any kernel crashed, 2 for bad input, 130 when interrupted.
"""

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from kernels import tools
from kernels.acquire.catalog import DEFAULT_CATALOG, KernelSpec, RunningKernel, load_catalog, select
from kernels.cli import subcommands as commands
from kernels.corpus.source import guest_args
from kernels.errors import KernelsError
from kernels.matrix.expectations import load_expectations
from kernels.matrix.runner import KernelRun, RunOptions, run_kernel
from kernels.matrix.schedule import remember, start_order
from kernels.matrix.shard import Piece, parse_shard, plan, slice_tests
from kernels.matrix.slots import Slots, Ticket
from kernels.paths import cache_root
from kernels.progress import Board
from kernels.report import kept_pcaps, record
from kernels.report.model import build
from kernels.report.outputs import publish
from kernels.report.table import render_text
from kernels.selftests.source import guest_args as selftests_guest_args
from kernels.vm.session import VmSession, vm_session
from netregress.errors import run_cli


def _parser() -> argparse.ArgumentParser:
    """The run's options; the subcommands (merge, ci, export) are listed in its epilog only,
    since a positional subcommand would take a test path for an unknown command."""
    names = ",".join(commands.COMMANDS)
    listing = "".join(f"\n  {name:8}{cmd.summary}" for name, cmd in commands.COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="scripts/matrix",
        usage=f"%(prog)s [options] [PYTEST_ARGS ...]\n       %(prog)s {{{names}}} ...",
        allow_abbrev=False,  # "--time" or "--out" belong to pytest, not to us
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the netregress suite on several kernels (VMs) and print the matrix.\n"
        "Unknown arguments are passed to pytest (paths, -k EXPR, -m MARK …).",
        epilog=f"commands (scripts/matrix COMMAND --help):{listing}",
    )
    parser.add_argument("--kernels", action="append", default=[], metavar="A,B",
                        help="kernel names from the catalog or bzImage paths (default: all "
                        "default kernels)")  # fmt: skip
    parser.add_argument(
        "--jobs", "-j", type=int, default=0, help="kernels at once (default: one per CPU)"
    )
    parser.add_argument(
        "--accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="VM acceleration (auto: KVM only if a probe guest boots)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="per-kernel limit; a guest still running then is a crash",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="where matrix.md, matrix.json, junit-<kernel>.xml and each "
        "kernel's console go (default: a new folder under the cache)",
    )
    parser.add_argument(
        "--catalog",
        type=Path,
        default=DEFAULT_CATALOG,
        metavar="FILE",
        help="the kernel catalog (default: kernels/matrix.toml)",
    )
    parser.add_argument(
        "--expectations",
        type=Path,
        metavar="FILE",
        help="known failures (default: kernels/expectations.toml)",
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        help="run only slice I of N (by kernel; by test within a kernel when N "
        "exceeds the kernels); combine the directories with `merge`",
    )
    parser.add_argument("--list", action="store_true", help="list the catalog and exit")
    return parser


def _describe(spec: KernelSpec) -> str:
    fields = record.describe(spec)
    kind = fields.pop("kind")
    return f"{spec.name:16} {kind:8} " + " ".join(f"{k}={v}" for k, v in fields.items())


def collect(pytest_args: list[str]) -> list[str]:
    """The host's view of the selection: matrix rows even for a kernel that dies at once.

    It keeps pytest's byte-code of the (assertion-rewritten) test modules even when the host
    runs with PYTHONDONTWRITEBYTECODE, so no guest rewrites them again
    (kernels/matrix/bytecode.py)."""
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([*argv, *pytest_args], capture_output=True, text=True, env=env)
    if proc.returncode == 4:
        detail = proc.stderr.strip() or proc.stdout.strip()
        raise KernelsError(f"pytest rejected the arguments: {detail}")
    return [line.strip() for line in proc.stdout.splitlines() if "::" in line]


def _jobs(wanted: int, guests: int) -> int:
    """Guests at once: two TCG guests saturate two cores; more only adds contention. The
    running kernel's column is not counted: it runs natively beside them (see `_is_host`)."""
    if wanted > 0:
        return max(1, min(wanted, guests))
    return max(1, min(guests, os.cpu_count() or 1))


def _is_host(spec: KernelSpec) -> bool:
    """The running kernel's column runs on the host from the start, beside the guests, not
    after them: it needs little CPU (~4 s of its ~40 s are CPU; the rest are the cases' own
    waits), and its verdicts held in every run beside two guests. Run last, it used to add
    its whole length to the matrix's wall time."""
    return isinstance(spec, RunningKernel)


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


def _planned(
    catalog: dict[str, KernelSpec], args: argparse.Namespace
) -> tuple[dict[str, KernelSpec], tuple[int, int], list[Piece]]:
    """Every kernel of the run by name (the whole plan), the shard (I, N) and its pieces."""
    names = [name.strip() for item in args.kernels for name in item.split(",") if name.strip()]
    specs = select(catalog, names)
    if len({spec.name for spec in specs}) != len(specs):
        raise KernelsError("a kernel is named twice in --kernels")
    shard = parse_shard(args.shard) if args.shard else (1, 1)
    pieces = plan([spec.name for spec in specs], shard[1])[shard[0] - 1]
    return {spec.name: spec for spec in specs}, shard, pieces


def run_matrix(args: argparse.Namespace, pytest_args: list[str]) -> int:
    catalog = load_catalog(args.catalog)
    if args.list:
        print("\n".join(_describe(spec) for spec in catalog.values()))
        return 0
    by_name, shard, pieces = _planned(catalog, args)
    specs = [by_name[piece.kernel] for piece in pieces]
    tools.require_root()
    if any(not isinstance(spec, RunningKernel) for spec in specs):
        tools.qemu(), tools.virtiofsd()
    if args.expectations is not None:
        load_expectations(args.expectations)  # bad file: fail now, not in every guest
    default_out = cache_root().parent / "matrix" / time.strftime("%Y%m%d-%H%M%S")
    out_dir = (args.output or default_out).resolve()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    collected = collect(pytest_args)
    mine = {t for piece in pieces for t in slice_tests(collected, piece)}
    rows = [nodeid for nodeid in collected if nodeid in mine]
    jobs = _jobs(args.jobs, sum(not _is_host(spec) for spec in specs))
    options = RunOptions(
        pytest_args=[*pytest_args, kept_pcaps.PYTEST_OPTION], accel=args.accel,
        timeout=args.timeout, expectations=args.expectations,
    )  # fmt: skip
    part = f" (shard {shard[0]}/{shard[1]})" if shard[1] > 1 else ""
    board = Board([spec.name for spec in specs])

    def one(piece: Piece, ticket: Ticket | None, vm: VmSession) -> KernelRun:
        spec = by_name[piece.kernel]
        try:
            if piece.count > 1 and not slice_tests(collected, piece):
                board.update(spec.name, "done: no test falls in this slice", final=True)
                return KernelRun(name=spec.name, out_dir=out_dir / spec.name)
            status = board.status_for(spec.name)
            resolved = selftests_guest_args(options.pytest_args, spec, status)
            mine = dataclasses.replace(options, pytest_args=guest_args(resolved, spec, status))
            run = run_kernel(spec, _sliced(mine, collected, piece), out_dir / spec.name,
                             vm.launcher, vm.children, status, ticket)  # fmt: skip
        finally:
            if ticket is not None:
                ticket.done()
        board.update(spec.name, _summary(run), final=True)
        return run

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    # Every guest starts now; `jobs` of them at full speed, the rest ahead (slots.py).
    slots = Slots(jobs)
    on_host = [piece for piece in pieces if _is_host(by_name[piece.kernel])]
    in_vms = [piece for piece in pieces if piece not in on_host]
    guests, host = ThreadPoolExecutor(max(1, len(specs))), ThreadPoolExecutor(1)
    try:
        # Leaving the session stops every guest, before the pools wait for their workers:
        # a worker blocked on a guest returns once it is gone.
        with vm_session(smp=max(1, (os.cpu_count() or 1) // jobs)) as vm:
            if vm.reaped:
                _say(f"stopped {len(vm.reaped)} leftover VM process(es) of a dead run")
            _say(f"{len(rows)} test(s) on {len(specs)} kernel(s){part}, {jobs} guest(s) at a time")
            with board:
                futures = {piece: host.submit(one, piece, None, vm) for piece in on_host} | {
                    piece: guests.submit(one, piece, slots.join(piece.kernel), vm)
                    for piece in start_order(in_vms, jobs)
                }
                runs = [futures[piece].result() for piece in pieces]
    finally:
        for pool in (guests, host):
            pool.shutdown(wait=True, cancel_futures=True)
    remember(
        {
            run.name: run.timing
            for piece, run in zip(pieces, runs, strict=True)
            if piece.count == 1 and run.problem is None and run.timing is not None
        }
    )
    matrix = build(runs, rows)
    if shard[1] == 1:  # a shard cannot know what the other shards' kernels did
        kept_pcaps.prune(matrix)
    entries = [
        record.Entry(piece, record.describe(by_name[piece.kernel]), record.cells_of(matrix, run))
        for piece, run in zip(pieces, runs, strict=True)
    ]
    rec = record.Record(
        run_id=uuid.uuid4().hex[:12], started=started, arch=os.uname().machine, shard=shard,
        kernels=list(by_name), collected=collected, entries=entries,
    )  # fmt: skip
    written = publish(matrix, rec, out_dir)
    print(render_text(matrix))
    print(f"\nmatrix: wrote {', '.join(p.name for p in written)} in {out_dir}")
    return 1 if matrix.unexpected() else 0


def _sliced(options: RunOptions, collected: list[str], piece: Piece) -> RunOptions:
    """The kernel's options for its slice: the other tests deselected, the arguments as given
    (so -k, -m and paths mean in the guest what they meant in the host's collection)."""
    if piece.count == 1:
        return options
    keep = set(slice_tests(collected, piece))
    others = [f"--deselect={nodeid}" for nodeid in collected if nodeid not in keep]
    return dataclasses.replace(options, pytest_args=[*options.pytest_args, *others])


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv

    def body() -> int:
        if words and words[0] in commands.COMMANDS:
            return commands.COMMANDS[words[0]].run(words[1:])
        args, pytest_args = _parser().parse_known_args(words)
        return run_matrix(args, [arg for arg in pytest_args if arg != "--"])

    return run_cli("matrix", body, interrupted="interrupted; every VM was stopped")


if __name__ == "__main__":
    sys.exit(main())
