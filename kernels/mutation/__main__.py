# SPDX-License-Identifier: GPL-2.0-only
"""`python -m kernels.mutation` (scripts/mutants): what share of plausible kernel regressions
the suite catches.

Each mutant is built into the source's one shared build dir (incremental), booted under QEMU
and run with the selection; the unpatched control runs first and must be clean. The verdicts
and the score go to OUT/mutants.{md,json,html}; run the same command again to resume.
`scripts/mutants mine …` writes candidate mutants from real stable fixes instead
(kernels/mutation/mine.py).
"""

import argparse
import os
import signal
import sys
import time
import tomllib
from pathlib import Path
from types import FrameType

from kernels.acquire.from_source.builder import BuildRequest, BuiltKernel, build
from kernels.acquire.from_source.source import debian_source
from kernels.bisect.vmtest import run_tests
from kernels.errors import KernelsError
from kernels.matrix.runner import KernelRun
from kernels.mutation import mine
from kernels.mutation.campaign import Campaign, run_campaign
from kernels.mutation.mutant import Mutant, read_revert, read_set
from kernels.mutation.report import combine, load, score, write
from kernels.paths import REPO_ROOT
from netregress.errors import run_cli

DEFAULT_SET = REPO_ROOT / "kernels/mutants"
NARROWING = DEFAULT_SET / "selection.toml"
DEFAULT_SELECTION = ["tests/cases", "tests/packetdrill"]


def _say(message: str) -> None:
    print(f"mutants: {message}", file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="scripts/mutants",
        description=__doc__.split("\n\n")[0].replace("\n", " ") if __doc__ else None,
        epilog="Example: scripts/mutants --only tunnel- -- tests/cases -m tunnel. "
        "Equivalent or unobservable survivors say why in their file's 'Survivor:' line. "
        "'scripts/mutants mine PACKAGE OLD NEW' writes candidate mutants from the stable fixes "
        "between two Debian source packages (scripts/mutants mine --help).",
    )
    cli.add_argument(
        "--debian", default="linux-source-6.1", metavar="PACKAGE",
        help="the Debian source package mutated (default: linux-source-6.1)",
    )  # fmt: skip
    cli.add_argument(
        "mutants", nargs="*", type=Path, default=[], metavar="MUTANT",
        help=f"mutant files or folders of *.patch (default: {DEFAULT_SET.relative_to(REPO_ROOT)})",
    )  # fmt: skip
    cli.add_argument(
        "--revert", type=Path, action="append", default=[], metavar="FIX.patch",
        help="a real fix applied in reverse (repeatable): does the selection fail without it?",
    )  # fmt: skip
    cli.add_argument(
        "--only", action="append", default=[], metavar="PREFIX",
        help="judge only mutants whose name starts with PREFIX (repeatable)",
    )  # fmt: skip
    cli.add_argument(
        "--output", type=Path, default=Path("mutants-out"), metavar="DIR",
        help="results and reports (default: ./mutants-out; the same DIR resumes)",
    )  # fmt: skip
    cli.add_argument(
        "--no-confirm", dest="confirm", action="store_false",
        help="do not re-run a killed mutant's killing tests (by default a kill must repeat)",
    )  # fmt: skip
    cli.add_argument(
        "--combine", type=Path, action="append", default=[], metavar="DIR",
        help="no campaign: combine finished campaigns' results (their mutants.json; the first "
        "is 'before') into --output's reports (repeatable)",
    )  # fmt: skip
    cli.add_argument(
        "--fresh", action="store_true",
        help="judge the selected mutants again even where a result is stored (e.g. after "
        "adding a test that should kill a survivor: --only NAME --fresh)",
    )  # fmt: skip
    cli.add_argument(
        "--whole", action="store_true",
        help=f"every mutant runs the whole selection (default: the part its subsystem's "
        f"markers select, {NARROWING.relative_to(REPO_ROOT)})",
    )  # fmt: skip
    cli.add_argument(
        "--serial", dest="overlap", action="store_false",
        help="build each mutant only after the previous guest has finished (default: the next "
        "build runs, niced, beside the guest)",
    )  # fmt: skip
    cli.add_argument(
        "-j", "--jobs", type=int, default=os.cpu_count() or 1,
        help="make -j at most (default: all CPUs, one less beside a guest; make runs niced)",
    )  # fmt: skip
    cli.add_argument(
        "--accel", choices=("auto", "kvm", "tcg"), default="auto",
        help="VM acceleration (auto: KVM only if a probe guest boots)",
    )  # fmt: skip
    cli.usage = "%(prog)s [OPTIONS] [MUTANT ...] [-- PYTEST_ARGS ...]"
    cli.epilog = (
        f"PYTEST_ARGS (after --): the tests run on each kernel (default: "
        f"{' '.join(DEFAULT_SELECTION)}). {cli.epilog}"
    )
    return cli


def _mutants(args: argparse.Namespace) -> list[Mutant]:
    named = args.mutants or ([] if args.revert else [DEFAULT_SET])
    mutants = read_set(named) + [read_revert(path) for path in args.revert]
    if args.only:
        mutants = [m for m in mutants if m.name.startswith(tuple(args.only))]
    if not mutants:
        raise KernelsError("no mutant selected (check the files and --only)")
    return mutants


def _narrowing(whole: bool) -> dict[str, str]:
    """subsystem → pytest -m expression, from the curated set's selection.toml."""
    if whole:
        return {}
    try:
        table = tomllib.loads(NARROWING.read_text()).get("narrow", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise KernelsError(f"cannot read {NARROWING}: {exc}") from None
    return {str(key): str(value) for key, value in table.items()}


def _combine(args: argparse.Namespace) -> int:
    campaigns = [load(folder) for folder in args.combine]
    records = combine(campaigns)
    args.output.mkdir(parents=True, exist_ok=True)
    paths = write(records, args.output, 0.0, before=score(campaigns[0]))
    print(f"before: {score(campaigns[0]).text()}")
    print(f"after:  {score(records).text()}")
    print("reports: " + ", ".join(str(path) for path in paths))
    return 0


def _campaign(args: argparse.Namespace) -> int:
    if args.combine:
        return _combine(args)
    mutants = _mutants(args)
    selection = args.selection or DEFAULT_SELECTION
    source = debian_source(args.debian, _say)

    def builder(request: BuildRequest) -> BuiltKernel:
        return build(
            BuildRequest(
                request.source,
                request.patches,
                name=request.name,
                jobs=min(request.jobs, args.jobs),
            ),  # fmt: skip
            lambda message: _say(f"build: {message}"),
        )

    def runner(built: BuiltKernel, tests: list[str]) -> KernelRun:
        out = args.output / "runs" / built.name
        return run_tests(built, tests, args.accel, lambda message: _say(f"vm: {message}"), out)

    args.output.mkdir(parents=True, exist_ok=True)
    _say(f"{len(mutants)} mutant(s) of {source.origin}; selection: {' '.join(selection)}")
    start = time.monotonic()
    campaign = Campaign(source, mutants, selection, args.output, builder, runner, _say,
                        args.confirm, args.overlap, _narrowing(args.whole), args.fresh)  # fmt: skip
    records = run_campaign(campaign)
    paths = write(records, args.output, time.monotonic() - start)
    print(f"score: {score(records).text()}")
    print("reports: " + ", ".join(str(path) for path in paths))
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Everything after the first `--` is the pytest selection, never a mutant file. A
    SIGTERM or SIGHUP (a CI job cancelled, a closed terminal) ends the campaign like Ctrl-C:
    the guest and the build are stopped, what was judged stays stored."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["mine"]:
        words = mine.parser().parse_args(given[1:])
        return run_cli("mutants mine", lambda: mine.mine(words))
    cut = given.index("--") if "--" in given else len(given)
    args = parser().parse_args(given[:cut])
    args.selection = given[cut + 1 :]
    return run_cli(
        "mutants",
        lambda: _campaign(args),
        interrupted="interrupted (run the same command again to resume)",
    )


if __name__ == "__main__":
    sys.exit(main())
