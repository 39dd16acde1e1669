# SPDX-License-Identifier: GPL-2.0-only
"""`git bisect run` with build + boot + test: find the commit that broke a test (the command
line is kernels/bisect/cli.py; `git bisect run` calls its `step` mode).

Each step builds the checked-out revision in the tree's one shared out-of-tree dir (so a step
costs an incremental build), boots it in a VM and runs the selected tests there. The verdict
is git's: 0 good (every selected test passed), 1 bad (a test failed), 125 skip (the revision
does not build, the kernel crashed or hung, or no test could run), 128 abort (the harness
itself is broken: the bisect must stop instead of marking commits wrongly).

Why crashes are skipped by default: the question is "where did this test start failing"; a
revision that panics during boot for an unrelated reason says nothing about it.
`--crash-is-bad` turns crashes into "bad" when the crash is the regression being hunted.
"""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from kernels.acquire.from_source.builder import BuildRequest, build
from kernels.acquire.from_source.source import SourceTree
from kernels.bisect.vmtest import run_tests
from kernels.errors import KernelsError
from kernels.matrix.results import UNEXPECTED, Outcome
from kernels.matrix.runner import KernelRun
from kernels.paths import REPO_ROOT
from netregress import naming
from netregress.process import Process, exit_with_owner

GOOD, BAD, SKIP, ABORT = 0, 1, 125, 128
OWNER = "NETREGRESS_BISECT_OWNER"  # the bisecting run: a step ends (ABORT) when it does
_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)


def _say(message: str) -> None:
    print(f"bisect: {message}", file=sys.stderr, flush=True)


def git(tree: Path, *args: str) -> str:
    """Run git in `tree`; a failure is the user's problem to hear about, with git's words."""
    proc = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise KernelsError(f"git {' '.join(args)} failed in {tree}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def verdict(run: KernelRun, crash_is_bad: bool) -> tuple[int, str]:
    """Map one kernel run to git bisect's exit status, with the reason shown in the log."""
    if run.problem is not None and run.problem.reason.startswith("cannot run"):
        return ABORT, run.problem.reason
    if run.problem is not None:
        return (BAD if crash_is_bad else SKIP), f"kernel problem: {run.problem.reason}"
    failed = [r.nodeid for r in run.results if r.outcome in (*UNEXPECTED, Outcome.XFAIL)]
    if failed:
        return BAD, f"failed: {', '.join(failed)}"
    passed = [r.nodeid for r in run.results if r.outcome == Outcome.PASS]
    if passed:
        return GOOD, f"passed: {', '.join(passed)}"
    return SKIP, "no selected test ran (all skipped)"


def step(
    tree: SourceTree, pytest_args: list[str], jobs: int, accel: str, crash_is_bad: bool
) -> int:
    """One bisect step on the revision git checked out: build, boot, test, verdict."""
    if OWNER in os.environ:
        exit_with_owner(os.environ[OWNER], ABORT)
    revision = git(tree.path, "log", "-1", "--format=%h %s")
    _say(f"step at {revision}")
    try:
        built = build(BuildRequest(source=tree, name=f"bisect-{tree.id}", jobs=jobs), _say)
    except KernelsError as exc:
        _say(f"skip {revision}: build failed: {exc}")
        return SKIP
    run = run_tests(built, pytest_args, accel, lambda message: _say(f"vm: {message}"))
    code, why = verdict(run, crash_is_bad)
    name = {GOOD: "good", BAD: "bad", SKIP: "skip", ABORT: "abort"}[code]
    _say(f"{name} {revision}: {why}")
    return code


def check_selection(pytest_args: list[str]) -> None:
    """Collect on the host first: a selector that matches nothing would mark every step skip."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *pytest_args],
        capture_output=True, text=True, cwd=REPO_ROOT,
    )  # fmt: skip
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()[-8:]
        raise KernelsError("the test selection collects no tests:\n" + "\n".join(lines))


def _prepare(tree: SourceTree, good: str, bad: str) -> tuple[str, str]:
    """Refuse what would make `git bisect` fail half-way; the full hashes of good and bad."""
    git(tree.path, "rev-parse", "--git-dir")
    if git(tree.path, "status", "--porcelain", "--untracked-files=no"):
        raise KernelsError(f"{tree.path} has uncommitted changes: commit or stash them first")
    if Path(git(tree.path, "rev-parse", "--absolute-git-dir"), "BISECT_LOG").exists():
        raise KernelsError(
            f"a bisect is already in progress in {tree.path}: 'git bisect reset' first"
        )
    resolved = []
    for label, rev in (("good", good), ("bad", bad)):
        try:
            resolved.append(git(tree.path, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"))
        except KernelsError:
            raise KernelsError(f"{label} revision '{rev}' is not a commit in {tree.path}") from None
    return resolved[0], resolved[1]


def bisect(tree: SourceTree, good: str, bad: str, step_args: list[str]) -> str:
    """Run the whole bisect; the first bad commit's hash. The tree is reset afterwards."""
    good_rev, bad_rev = _prepare(tree, good, bad)
    git(tree.path, "bisect", "start", bad_rev, good_rev)
    try:
        command = [
            sys.executable,
            "-m",
            "kernels.bisect.cli",
            "step",
            "--tree",
            str(tree.path),
            *step_args,
        ]
        proc = Process(
            ["git", "-C", str(tree.path), "bisect", "run", *command],
            stdin=None, stdout=subprocess.PIPE, stderr=None, cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), OWNER: naming.unique("bisect")},
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            output = ""
            for line in io.TextIOWrapper(proc.stdout):
                output += line
                sys.stdout.write(line)
            code = proc.wait()
        finally:
            proc.stop()
        found = _FIRST_BAD.search(output)
        if code != 0 or not found:
            raise KernelsError(
                f"git bisect run did not find a first bad commit (exit status {code})"
            )
        _say("bisect log:\n" + git(tree.path, "bisect", "log"))
        return found.group(1)
    finally:
        git(tree.path, "bisect", "reset")
