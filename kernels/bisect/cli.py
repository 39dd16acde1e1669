# SPDX-License-Identifier: GPL-2.0-only
"""`scripts/bisect`: the command line of the bisect (kernels/bisect/bisect.py), its `step` mode
(what `git bisect run` calls), the demo (kernels/bisect/demo.py) and the bisect over a Debian
suite's packaged kernels (`--debian`, kernels/bisect/releases.py).

Why a module above both: the demo drives the bisect, and this command offers both, so neither
of them imports the other's command line.
"""

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from kernels import tools
from kernels.acquire import changelog
from kernels.acquire.catalog import DebianKernel
from kernels.acquire.debian import unpacked_tree
from kernels.acquire.debian_series import Packaged, branch_of, find, series, served
from kernels.acquire.fetch import fetch
from kernels.acquire.from_source.source import git_source, git_tree
from kernels.acquire.kernel import GitSource
from kernels.bisect import demo, release_report
from kernels.bisect.bisect import ABORT, bisect, check_selection, git, step
from kernels.bisect.releases import RealJudge, search
from kernels.bisect.vmtest import add_accel_option, add_run_options
from kernels.errors import KernelsError
from kernels.paths import cache_root
from kernels.report import kcidb
from kernels.vm.session import vm_session
from netregress.errors import run_cli


def add_crash_option(cli: argparse.ArgumentParser) -> None:
    """`--crash-is-bad`: every bisect skips a crashed kernel unless told otherwise."""
    cli.add_argument(
        "--crash-is-bad",
        action="store_true",
        help="a crashed or hung kernel counts as bad (default: skip)",
    )


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
        "tests/cases/test_c01_tcp_wqueue_too_big.py. --debian: bisect over the kernels a "
        "Debian suite serves, no build (scripts/bisect --debian bookworm --help).",
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
        add_crash_option(cmd)
        add_run_options(cmd)
    # Set after add_subparsers, which makes the modes' prog out of the usage.
    cli.usage = (
        "%(prog)s [run] --tree DIR --good REV --bad REV [options] -- PYTEST_ARGS ...\n"
        "       %(prog)s step --tree DIR [options] -- PYTEST_ARGS ...\n"
        "       %(prog)s --demo [options] [-- PYTEST_ARGS ...]\n"
        "       %(prog)s --debian SUITE[/FLAVOUR] [--good VERSION] [--bad VERSION] [options] "
        "-- PYTEST_ARGS ..."
    )
    return cli  # fmt: skip


def _step_args(args: argparse.Namespace) -> list[str]:
    """The options a step needs, passed through `git bisect run` unchanged."""
    flags = ["-j", str(args.jobs), "--accel", args.accel]
    return [*flags, *(["--crash-is-bad"] if args.crash_is_bad else []), "--", *args.pytest_args]


def debian_parser() -> argparse.ArgumentParser:
    """`--debian`: the bisect over a suite's packaged kernels (kernels/bisect/releases.py)."""
    cli = argparse.ArgumentParser(
        prog="scripts/bisect",
        usage="%(prog)s --debian SUITE[/FLAVOUR] [--good VERSION] [--bad VERSION] "
        "[--branch X.Y] [--list] [options] -- PYTEST_ARGS ...",
        description="Which kernel update changed a test's verdict: list the kernels a Debian "
        "suite serves (its security updates included) for one upstream branch, then boot "
        "them in a VM, halving the range, and run the selected tests on each (no build). "
        "A build that cannot be fetched or booted, crashes, or runs none of the tests is "
        "skipped and reported. The changelog of the package found names the upstream "
        "commits in between; the suspects are those of the failing test's subsystem.",
        epilog="Example: scripts/bisect --debian bookworm --kernel-pkt-corpus auto -- "
        "'tests/cases/kernel-packetdrill.corpus::tcp_rfc5961_rst-syn-recv.pkt::ipv4'",
    )
    cli.add_argument(
        "--debian",
        required=True,
        metavar="SUITE[/FLAVOUR]",
        help="the suite, and the image flavour (default cloud-amd64)",
    )
    cli.add_argument(
        "--good",
        metavar="VERSION",
        help="a build where the tests pass: its ABI (6.1.0-47), Debian version "
        "(6.1.170-3) or upstream release (6.1.170); default: an end of the series",
    )
    cli.add_argument("--bad", metavar="VERSION", help="a build where they fail (same forms)")
    cli.add_argument(
        "--branch",
        metavar="X.Y",
        help="the upstream branch to walk (default: that of --good/--bad, else "
        "the suite's own: bookworm 6.1; bookworm also serves 6.12)",
    )
    cli.add_argument(
        "--list",
        action="store_true",
        help="only list the packaged kernels of the branch, boot nothing",
    )
    cli.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="where the guests' results and release-bisect.md/.json go "
        "(default: ~/.cache/netregress/bisect/SUITE-TIME)",
    )
    add_crash_option(cli)
    add_accel_option(cli)
    cli.add_argument(
        "pytest_args",
        nargs="*",
        metavar="PYTEST_ARGS",
        help="after --: the tests (node ids, files, -k EXPR, --kernel-pkt-corpus)",
    )
    return cli  # fmt: skip


def _series(args: argparse.Namespace) -> tuple[str, str, str, list[Packaged]]:
    """Suite, flavour, branch and the branch's builds, oldest first."""
    suite, _, flavour = args.debian.partition("/")
    flavour = flavour or "cloud-amd64"
    kernels, own = served(suite, flavour, _say)
    named = [branch_of(v) for v in (args.good, args.bad) if v]
    if len(set(named)) > 1:
        raise KernelsError(f"--good {args.good} and --bad {args.bad} are on different branches")
    branch = args.branch or (named[0] if named else own)
    found = series(kernels, branch)
    if not found:
        branches = sorted({k.branch for k in kernels}) or ["none"]
        raise KernelsError(
            f"Debian {suite} serves no linux-image-*-{flavour} build of branch {branch} "
            f"(branches served: {', '.join(branches)})"
        )
    return suite, flavour, branch, found


def _ends(found: list[Packaged], good: str | None, bad: str | None) -> tuple[int, int]:
    """Indexes of the range's older and newer end: the builds named, else the series' ends."""
    picked = {label: found.index(find(found, value, label))
              for label, value in (("good", good), ("bad", bad)) if value}  # fmt: skip
    if len(picked) == 2 and picked["good"] == picked["bad"]:
        raise KernelsError("--good and --bad name the same build")
    if not picked:
        return 0, len(found) - 1
    if len(picked) == 1:
        (index,) = picked.values()
        other = len(found) - 1 if index < len(found) - 1 else 0
        return min(index, other), max(index, other)
    return min(picked.values()), max(picked.values())


def _say(message: str) -> None:
    print(f"bisect: {message}", file=sys.stderr, flush=True)


def _changelog(spec: DebianKernel) -> Path | None:
    """The changelog a judged build's package shipped (the build is in the cache by now)."""
    image = fetch(spec, _say).image
    tree = unpacked_tree(image) if image is not None else None
    return changelog.find_changelog(tree) if tree is not None else None


def _run_debian(args: argparse.Namespace) -> int:
    suite, flavour, branch, found = _series(args)
    print(f"Debian {suite} {flavour}, branch {branch}: {len(found)} packaged kernels")
    for kernel in found:
        print(f"  {kernel.package:45} {kernel.version:22} {kernel.pocket}")
    if args.list:
        return 0
    if not args.pytest_args:
        raise KernelsError("name the tests to judge each kernel by, after --")
    old, new = _ends(found, args.good, args.bad)
    tools.require_root()
    tools.qemu(), tools.virtiofsd()
    check_selection(args.pytest_args)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = (args.output or cache_root().parent / "bisect" / f"{suite}-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with vm_session() as vm:
        judge = RealJudge(lambda k: k.spec(suite, flavour), args.pytest_args, args.accel,
                          args.crash_is_bad, out, vm, _say)  # fmt: skip
        result = search(found, old, new, judge, _say)
    report = release_report.Report(suite, flavour, branch, args.pytest_args, result,
                                   time.monotonic() - started)  # fmt: skip
    for judged in result.steps:  # the direction is the kernels' word, not the user's
        for label, given in (("good", args.good), ("bad", args.bad)):
            if given and judged.kernel == find(found, given, label) and judged.verdict != label:
                _say(f"note: --{label} {given} was judged {judged.verdict}: {judged.why}")
    assert result.before is not None and result.after is not None
    logs = [_changelog(k.spec(suite, flavour)) for k in (result.after, result.before)]
    release_report.add_changes(report, logs[0], logs[1])
    print("\n".join(release_report.summary(report)))
    for path in release_report.write(report, out):
        print(f"report: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--demo"]:
        return demo.main(argv[1:])
    head = argv[: argv.index("--")] if "--" in argv else argv
    if any(word == "--debian" or word.startswith("--debian=") for word in head):
        debian_args = debian_parser().parse_args(argv)
        return run_cli("bisect", lambda: _run_debian(debian_args))
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
