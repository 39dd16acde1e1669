# SPDX-License-Identifier: GPL-2.0-only
"""`scripts/bisect`: the command line of the bisect (kernels/bisect/bisect.py), its `step` mode
(what `git bisect run` calls) and the demo (kernels/bisect/demo.py).

Why a module above both: the demo drives the bisect, and this command offers both, so neither
of them imports the other's command line.
"""

import argparse
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from kernels import tools
from kernels.acquire.from_source.source import git_source, git_tree
from kernels.acquire.kernel import GitSource
from kernels.bisect import demo
from kernels.bisect.bisect import ABORT, bisect, check_selection, git, step
from kernels.bisect.vmtest import add_run_options
from kernels.report import kcidb
from netregress.errors import run_cli


def parser() -> argparse.ArgumentParser:
    """The run and step modes. ``--demo`` has its own parser (kernels/bisect/demo.py; `main`
    hands it over before this one parses), so the usage and epilog name it."""
    cli = argparse.ArgumentParser(
        prog="scripts/bisect",
        description="Find the first bad commit of a kernel git tree for a test: every step "
        "builds (incrementally), boots the kernel in a VM and runs the selected tests.",
        epilog="--demo: bisect a synthetic 6.1 history whose culprit is known, and check it "
        "lands there (scripts/bisect --demo --help). Each mode's options: scripts/bisect MODE "
        "--help. Example: scripts/bisect --tree ~/src/linux --good v6.0 --bad v6.1 -- "
        "tests/cases/test_c01_tcp_wqueue_too_big.py",
    )
    sub = cli.add_subparsers(dest="command", title="modes")
    modes = {
        "run": "bisect (the default mode)",
        "step": "one step on the checked-out revision (git bisect run calls it)",
    }
    for name, summary in modes.items():
        cmd = sub.add_parser(name, help=summary)
        cmd.add_argument("--tree", type=Path, required=True, help="the kernel git tree")
        if name == "run":
            cmd.add_argument("--good", required=True, help="a revision where the tests pass")
            cmd.add_argument("--bad", required=True, help="a revision where they fail")
            cmd.add_argument(
                "--kcidb",
                type=Path,
                metavar="FILE",
                help="also write the result as KCIDB data: the first bad commit blamed for "
                "the failing test (docs/kcidb.md)",
            )
        cmd.add_argument(
            "--crash-is-bad",
            action="store_true",
            help="a crashed or hung kernel counts as bad (default: skip)",
        )
        add_run_options(cmd)
    # Set after add_subparsers, which makes the modes' prog out of the usage.
    cli.usage = (
        "%(prog)s [run] --tree DIR --good REV --bad REV [options] -- PYTEST_ARGS ...\n"
        "       %(prog)s step --tree DIR [options] -- PYTEST_ARGS ...\n"
        "       %(prog)s --demo [options] [-- PYTEST_ARGS ...]"
    )
    return cli  # fmt: skip


def _step_args(args: argparse.Namespace) -> list[str]:
    """The options a step needs, passed through `git bisect run` unchanged."""
    flags = ["-j", str(args.jobs), "--accel", args.accel]
    return [*flags, *(["--crash-is-bad"] if args.crash_is_bad else []), "--", *args.pytest_args]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--demo"]:
        return demo.main(argv[1:])
    if argv[:1] not in (["run"], ["step"], ["-h"], ["--help"]):
        argv = ["run", *argv]
    args = parser().parse_args(argv)
    # A failing step must abort `git bisect run` (ABORT), not mark the revision bad.
    return run_cli("bisect", lambda: _run(args), status=ABORT if args.command == "step" else 2)


def _run(args: argparse.Namespace) -> int:
    tree = git_tree(args.tree)
    if args.command == "step":
        return step(tree, args.pytest_args, args.jobs, args.accel, args.crash_is_bad)
    tools.require_root()
    tools.qemu(), tools.virtiofsd()
    check_selection(args.pytest_args)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    first_bad = bisect(tree, args.good, args.bad, _step_args(args))
    print(f"first bad commit: {git(tree.path, 'log', '-1', '--format=%H %s', first_bad)}")
    if args.kcidb is not None:
        checked_out = git_source(tree.path)
        source = GitSource(first_bad, checked_out.repository_url if checked_out else "")
        subject = git(tree.path, "log", "-1", "--format=%s", first_bad)
        data = kcidb.bisect_culprit(
            source, subject, args.good, args.pytest_args, started, platform.machine()
        )
        args.kcidb.write_text(json.dumps(data, indent=1) + "\n")
        print(f"KCIDB data: {args.kcidb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
