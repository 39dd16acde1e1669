# SPDX-License-Identifier: GPL-2.0-only
"""scripts/bisect: verdict mapping, refusing what would break `git bisect` half-way, and the
full demo (a synthetic 6.1 history with a known culprit), which needs builds and VM boots and
so only runs with NETREGRESS_BISECT_DEMO=1 (`tox -e bisect-demo`).
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernels.acquire.from_source.source import git_tree
from kernels.bisect import bisect, cli, demo
from kernels.errors import KernelsError
from kernels.matrix.results import Outcome, TestResult
from kernels.matrix.runner import KernelRun
from kernels.vm.console import Crash
from netns.variants import broken
from netregress import process
from tests.unit.test_kernel_build import fake_tree, written_pid
from tests.unit.test_process import alive, wait_dead


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


_BISECT = """
import subprocess, sys
from pathlib import Path
from kernels.acquire.from_source.source import git_tree
from kernels.bisect import bisect
if sys.argv[2] == "raw":
    bisect.Process = subprocess.Popen
if sys.argv[2] == "unwatched":
    bisect.OWNER = "NETREGRESS_NOBODY"
bisect.bisect(git_tree(Path(sys.argv[1])), "HEAD~1", "HEAD", [])
"""


@pytest.mark.parametrize(
    "start",
    [
        "core",
        broken("raw", id="raw-popen", why="a raw Popen's git bisect outlives the run"),
        broken("unwatched", id="unwatched", why="a step that does not watch its run outlives it"),
    ],
)
def test_a_killed_bisect_leaves_neither_git_nor_its_step(
    repo: Path, tmp_path: Path, start: str
) -> None:
    """`git bisect run` runs through the process core (it dies with us), and the step git
    started for us, which no signal of ours reaches, ends with our run: a stand-in git runs a
    step that watches its owner as `bisect step` does, everything else goes to the real git."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    pids = {name: tmp_path / f"{name}.pid" for name in ("git", "step")}
    (tmp_path / "step.py").write_text(
        "import os, pathlib, time\n"
        "from netregress.process import exit_with_owner\n"
        f"if {bisect.OWNER!r} in os.environ:\n"
        f"    exit_with_owner(os.environ[{bisect.OWNER!r}], {bisect.ABORT})\n"
        f"pathlib.Path({str(tmp_path / 'working')!r}).write_text('yes')\n"
        "time.sleep(60)\n"
    )
    (stubs / "git").write_text(
        "#!/bin/sh\n"
        'case " $* " in *" bisect run "*)\n'
        f"  echo $$ > {pids['git']}\n"
        f"  {sys.executable} {tmp_path}/step.py & echo $! > {pids['step']}; wait\n"
        "  exec sleep 60;;\n"  # still busy after its step, as git is checking out the next
        "esac\n"
        f'exec {shutil.which("git")} "$@"\n'
    )
    (stubs / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"}
    run = subprocess.Popen([sys.executable, "-c", _BISECT, str(repo), start], env=env,
                           stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "working").exists():
            assert time.monotonic() < deadline, "the stand-in git never started its step"
            time.sleep(0.05)
        git_pid, step_pid = int(pids["git"].read_text()), int(pids["step"].read_text())
        assert alive(git_pid) and alive(step_pid)
        run.kill()
        run.wait()
        assert wait_dead(git_pid) and wait_dead(step_pid)
    finally:
        run.kill()
        run.wait()
        process.kill(pid for path in pids.values() if (pid := written_pid(path)) is not None)


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
