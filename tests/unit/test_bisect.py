# SPDX-License-Identifier: GPL-2.0-only
"""scripts/bisect: verdict mapping, refusing what would break `git bisect` half-way, and the
full demo (a synthetic 6.1 history with a known culprit), which needs builds and VM boots and
so only runs with NETREGRESS_BISECT_DEMO=1 (`tox -e bisect-demo`).
"""

import os
import subprocess
from pathlib import Path

import pytest

from kernels.acquire.from_source.source import git_tree
from kernels.bisect import bisect, cli, demo
from kernels.errors import KernelsError
from kernels.matrix.results import Outcome, TestResult
from kernels.matrix.runner import KernelRun
from kernels.vm.console import Crash
from tests.unit.test_kernel_build import fake_tree


def run_with(*outcomes: Outcome, problem: str | None = None) -> KernelRun:
    run = KernelRun(name="k", out_dir=Path("/nonexistent"))
    run.results = [TestResult(f"t.py::t{i}", outcome) for i, outcome in enumerate(outcomes)]
    run.problem = Crash(problem, "") if problem else None
    return run


@pytest.mark.parametrize(
    ("run", "crash_is_bad", "code"),
    [
        (run_with("pass", "pass"), False, bisect.GOOD),
        (run_with("pass", "fail"), False, bisect.BAD),
        (run_with("xfail"), False, bisect.BAD),
        (run_with("skip"), False, bisect.SKIP),
        (run_with("pass", "crash", problem="Kernel panic - not syncing"), False, bisect.SKIP),
        (run_with("pass", "crash", problem="Kernel panic - not syncing"), True, bisect.BAD),
        (run_with(problem="cannot run: no virtiofsd"), False, bisect.ABORT),
    ],
)
def test_verdict(run: KernelRun, crash_is_bad: bool, code: int) -> None:
    assert bisect.verdict(run, crash_is_bad)[0] == code


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    tree = fake_tree(tmp_path / "linux")
    identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
    bisect.git(tree, "init", "-q")
    bisect.git(tree, "add", "-A")
    bisect.git(tree, *identity, "commit", "-q", "-m", "base")
    (tree / "Kconfig").write_text("# changed\n")
    bisect.git(tree, *identity, "commit", "-q", "-am", "next")
    return tree


def test_prepare_resolves_revisions(repo: Path) -> None:
    good, bad = bisect._prepare(git_tree(repo), "HEAD~1", "HEAD")
    assert len(good) == len(bad) == 40 and good != bad


def test_prepare_refuses_bad_input(repo: Path) -> None:
    tree = git_tree(repo)
    with pytest.raises(KernelsError, match="good revision 'nope' is not a commit"):
        bisect._prepare(tree, "nope", "HEAD")
    (repo / "Kconfig").write_text("# uncommitted\n")
    with pytest.raises(KernelsError, match="uncommitted changes"):
        bisect._prepare(tree, "HEAD~1", "HEAD")
    bisect.git(repo, "checkout", "-q", "--", "Kconfig")
    bisect.git(repo, "bisect", "start", "HEAD", "HEAD~1")
    with pytest.raises(KernelsError, match="already in progress"):
        bisect._prepare(tree, "HEAD~1", "HEAD")


def test_cli_bad_tree_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--tree", str(tmp_path), "--good", "a", "--bad", "b", "--", "-k", "x"]) == 2
    assert "is not a kernel source tree" in capsys.readouterr().err


@pytest.mark.skipif(
    not os.environ.get("NETREGRESS_BISECT_DEMO"),
    reason="builds kernels and boots VMs for ~an hour: set NETREGRESS_BISECT_DEMO=1"
    " (tox -e bisect-demo)",
)
def test_bisect_demo_lands_on_the_culprit() -> None:
    assert demo.main([]) == 0
    tree = demo.demo_tree()
    assert (
        subprocess.run(["git", "-C", str(tree), "bisect", "log"], capture_output=True).returncode
        != 0
    )
