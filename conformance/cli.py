# SPDX-License-Identifier: GPL-2.0-only
"""``scripts/conformance``: the command line over the harness modules.

Exit status: 0 every compared run agrees (flakes aside), 1 a reproducible disagreement,
2 bad input (corpus, binary, reference JSON, arguments), 3 the --kernel guest did not finish,
130 interrupted.
"""

import argparse
import datetime
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from packetdrill.backend import DEFAULT_TIMEOUT, Backend

from . import environment, record, report
from .compare import agrees, summarize
from .corpus import CONVENTIONS, IP_VERSIONS, CorpusError, find_jobs
from .engines import Engine, LiveEngine, RecordedEngine, skip_reasons
from .errors import GuestProblem, UsageProblem
from .progress import Progress
from .runner import rerun_alone, run_all

OK, DISAGREE, BAD_INPUT, INCOMPLETE, INTERRUPTED = 0, 1, 2, 3, 130


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="scripts/conformance",
        description="Run a packetdrill corpus under the builtin engine and a real packetdrill "
        "binary (or a recorded reference JSON) and report where verdicts differ. "
        "'scripts/conformance build-reference --source DIR' builds a binary.",
    )
    p.add_argument(
        "--corpus", required=True, type=Path, metavar="DIR", help="every *.pkt under DIR is run"
    )
    side = p.add_mutually_exclusive_group()
    side.add_argument("--reference", metavar="PATH", help="a real packetdrill binary")
    side.add_argument(
        "--against",
        type=Path,
        metavar="FILE",
        help="compare with the reference runs recorded in this JSON",
    )
    p.add_argument(
        "--conventions",
        choices=CONVENTIONS,
        default="upstream",
        help="upstream: run_all.py's variants and arguments (default); ours: as our "
        "pytest plugin runs tests/ (--ip_version pins, netregress: markers); kernel: the "
        "runs and arguments of the corpus's own ksft_runner.sh (the kernel's selftest "
        "corpus; use --ip-version all)",
    )
    p.add_argument(
        "--ip-version",
        choices=tuple(IP_VERSIONS),
        default="both",
        help="variants to run: 4, 6, mapped (ipv4-mapped-ipv6), both (4 and 6; default) or all",
    )
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="parallel runs (default 1)")
    p.add_argument(
        "--reruns",
        type=int,
        default=3,
        metavar="N",
        help="re-run each disagreement alone up to N times (default 3)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"per run, like run_all.py (default {DEFAULT_TIMEOUT:.0f})",
    )
    p.add_argument(
        "--args",
        default="",
        metavar="WORDS",
        help="extra arguments for every run, written with '=' since they start with "
        "'--', e.g. --args=--tolerance_usecs=10000",
    )
    p.add_argument(
        "--variant-args",
        action="append",
        default=[],
        metavar="VARIANT=WORDS",
        help="replace a variant's address set and defines, e.g. "
        "'ipv4=--local_ip=10.0.0.1 -D CODE=x' (repeatable)",
    )
    p.add_argument("--out", type=Path, metavar="FILE", help="write the JSON here")
    p.add_argument(
        "--kernel",
        metavar="NAME|PATH",
        help="run inside this matrix kernel's VM guest (kernels/matrix.toml)",
    )
    p.add_argument(
        "--accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="with --kernel: VM acceleration (auto: KVM only if a probe guest boots)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--progress-file", type=Path, help=argparse.SUPPRESS)  # --kernel's guest
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build-reference"]:
        from .build import main as build_main

        return build_main(argv[1:])
    args = parser().parse_args(argv)
    _interrupt_on_signals()
    try:
        if args.kernel:
            from .guest import run_in_kernel

            doc, status = run_in_kernel(args.kernel, _without_kernel(argv), args.accel)
        else:
            doc, status = run(args, argv)
    except (CorpusError, record.ReferenceError, UsageProblem) as err:
        print(f"conformance: {err}", file=sys.stderr)
        return BAD_INPUT
    except GuestProblem as err:
        print(f"conformance: {err}", file=sys.stderr)
        return INCOMPLETE
    except KeyboardInterrupt:
        # Worker threads and their children (each in an anonymous namespace, dying with
        # us by PR_SET_PDEATHSIG) go with the process; nothing named is left to clean.
        print("\nconformance: interrupted", file=sys.stderr, flush=True)
        os._exit(INTERRUPTED)
    if args.out:
        try:
            record.write(args.out, doc)
        except OSError as err:
            print(f"conformance: cannot write {args.out}: {err.strerror}", file=sys.stderr)
            return BAD_INPUT
    sys.stdout.write(report.render(doc))
    if args.out:
        print(f"JSON: {args.out}")
    return status


def _interrupt_on_signals() -> None:
    """Ctrl-C, SIGTERM and SIGHUP all end the run the same way (even when the shell that
    started us in the background ignores SIGINT).

    Only in this process: a library child forked from us (pyroute2 creates namespaces in
    one and ends it with SIGTERM) inherits the handler, and must die, not unwind into our
    code and carry on running the corpus."""
    owner = os.getpid()

    def interrupt(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            os._exit(128 + signum)
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)


def _without_kernel(argv: list[str]) -> list[str]:
    out, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word in ("--kernel", "--accel", "--out"):
            skip = True
        elif not word.startswith(("--kernel=", "--accel=", "--out=")):
            out.append(word)
    return out


def run(args: argparse.Namespace, argv: list[str]) -> tuple[dict[str, Any], int]:
    """One local run: the document and the exit status."""
    if args.jobs < 1 or args.reruns < 0 or args.timeout <= 0:
        raise UsageProblem("--jobs must be ≥ 1, --reruns ≥ 0 and --timeout > 0")
    variant_args = {}
    for item in args.variant_args:
        variant, sep, words = item.partition("=")
        if not sep or variant not in ("ipv4", "ipv4-mapped-ipv6", "ipv6"):
            raise UsageProblem(
                f"--variant-args wants VARIANT=WORDS with VARIANT one of ipv4, "
                f"ipv4-mapped-ipv6, ipv6: {item}"
            )
        variant_args[variant] = words
    jobs = find_jobs(args.corpus, args.conventions, args.ip_version, args.args, variant_args)
    if not jobs:
        raise CorpusError(
            f"no runs: --ip-version {args.ip_version} matches no script variant under {args.corpus}"
        )
    skipped = skip_reasons(jobs)
    engines: list[Engine] = [LiveEngine("builtin", Backend("builtin"), args.timeout, skipped)]
    reference_meta: dict[str, Any] = {"kind": "none"}
    recorded: dict[str, Any] = {}
    if args.reference:
        binary = _binary(args.reference)
        engines.append(LiveEngine("reference", Backend("upstream", binary), args.timeout, skipped))
        reference_meta = {"kind": "binary", "binary": binary}
    elif args.against:
        recorded = record.load(args.against)
        if recorded.get("convention") != args.conventions:
            raise record.ReferenceError(
                f"{args.against} was recorded with --conventions {recorded.get('convention')}"
            )
        outcomes = record.reference_outcomes(recorded, args.against, jobs, args.corpus)
        engines.append(RecordedEngine(outcomes))
        reference_meta = {
            "kind": "recorded",
            "against": str(args.against),
            "binary": recorded["reference"].get("binary"),
            "recorded": recorded.get("created"),
            "kernel_release": recorded.get("environment", {}).get("kernel_release"),
        }
    facts = environment.probe()
    progress = Progress(len(jobs) * sum(e.live for e in engines), stream=_progress_stream(args))
    for line in environment.describe(facts):
        progress.note(f"conformance: {line}")
    runs = run_all(jobs, engines, args.jobs, progress)
    reruns = {}
    if len(engines) > 1:
        reruns = rerun_alone(jobs, engines, runs, args.reruns, agrees, progress)
    summary = summarize(jobs, runs, reruns)
    per_variant = {
        variant: summarize([j for j in jobs if j.variant == variant], runs, reruns)
        for variant in dict.fromkeys(job.variant for job in jobs)
    }
    meta = {
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": "scripts/conformance " + shlex.join(argv),
        "record_command": (
            recorded.get("record_command") if args.against else _record_command(args)
        ),
        "corpus": str(args.corpus),
        "convention": args.conventions,
        "ip_version": args.ip_version,
        "reruns": args.reruns,
        "timeout": args.timeout,
        "reference": reference_meta,
    }
    doc = record.document(meta, facts, jobs, runs, reruns, summary, per_variant)
    return doc, DISAGREE if summary.reproducible else OK


def _progress_stream(args: argparse.Namespace) -> TextIO | None:
    if args.progress_file:
        return open(args.progress_file, "w", buffering=1)
    return open(os.devnull, "w") if args.quiet else None


def _binary(path: str) -> str:
    if not os.path.isfile(path):
        raise UsageProblem(
            f"reference binary not found: {path} (build one with "
            f"'scripts/conformance build-reference --source DIR')"
        )
    if not os.access(path, os.X_OK):
        raise UsageProblem(f"reference binary is not executable: {path}")
    return os.path.abspath(path)


def _record_command(args: argparse.Namespace) -> str | None:
    """How to (re-)record this JSON as a reference: the same run, with a binary."""
    if args.out is None:
        return None
    words = [
        "scripts/conformance",
        "--corpus",
        str(args.corpus),
        "--conventions",
        args.conventions,
        "--ip-version",
        args.ip_version,
        "--jobs",
        str(args.jobs),
        "--reruns",
        str(args.reruns),
        "--timeout",
        f"{args.timeout:g}",
        "--reference",
        args.reference or "PATH/TO/packetdrill",
        "--out",
        str(args.out),
    ]
    return shlex.join(words)
