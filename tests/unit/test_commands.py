# SPDX-License-Identifier: GPL-2.0-only
"""Every ``scripts/*`` behaves like a command: ``-h``/``--help`` prints its usage, exits 0 and
does nothing else; ``scripts/netregress`` asks pytest, not the disk, whether test paths were
named, and lists each skip once.

Why stand-ins on PATH: "nothing else" is proven, not assumed. Each command runs with a PATH
whose first folder holds a stand-in for every program that installs, builds, boots or lints
(apt-get, sudo, make, cargo, qemu, ruff, python3 for ``-m venv`` …), each of which only notes
its name; the cache (XDG_CACHE_HOME, where builds, tools and results go) and the working
directory are empty folders that must stay empty (but for scapy's tables: ``IMPORT_CACHES``).
Every command runs twice: in this checkout (its virtualenv answers with argparse's help) and in
a copy of ``scripts/`` whose ``.venv`` has no Python, only ruff and mypy stand-ins (the header
comment answers; ``scripts/lint``, which calls ``.venv/bin/ruff`` by its path, would run one).
"""

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from netns import rootless

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(path.name for path in (REPO / "scripts").iterdir() if path.is_file())
STAND_INS = ("apt-get", "apt", "sudo", "make", "cargo", "qemu-system-x86_64", "virtiofsd",
             "ruff", "mypy", "uv", "go", "curl", "pip", "python3")  # fmt: skip
# Importing scapy pickles its tables (services, manufacturers …) into the cache, whoever imports
# it: a library's own cache, as __pycache__ is Python's, not something a command did. The help
# of a command whose modules use scapy (netns, pcap2pkt, the matrix's reports) imports it.
IMPORT_CACHES = ("scapy/*.pickle",)


@dataclass
class Sandbox:
    """Where a command runs, and what it would leave if it did more than print its help."""

    env: dict[str, str]
    ran: Path  # one line per stand-in started
    cache: Path
    cwd: Path

    def stand_in(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'#!/bin/sh\necho "{path.name} $*" >> "{self.ran}"\nexit 1\n')
        path.chmod(0o755)

    def run(self, command: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(command), *args], cwd=self.cwd, env=self.env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    def untouched(self) -> None:
        assert self.ran.read_text() == "", f"programs started: {self.ran.read_text()}"
        made = [p.relative_to(self.cache) for p in self.cache.rglob("*") if not p.is_dir()]
        unexpected = [p for p in made if not any(p.match(glob) for glob in IMPORT_CACHES)]
        assert not unexpected, f"files appeared in the cache: {unexpected}"
        assert not list(self.cwd.iterdir()), "files appeared in the working directory"


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cwd").mkdir()
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}  # fmt: skip
    box = Sandbox(env, tmp_path / "ran", tmp_path / "cache", tmp_path / "cwd")
    box.ran.touch()
    for name in STAND_INS:
        box.stand_in(tmp_path / "bin" / name)
    return box


@pytest.fixture
def uninstalled(tmp_path: Path, sandbox: Sandbox) -> Path:
    """A copy of the scripts whose .venv holds no Python, only ruff and mypy stand-ins."""
    root = tmp_path / "checkout"
    shutil.copytree(REPO / "scripts", root / "scripts")
    shutil.copy(REPO / "pyproject.toml", root)
    for name in ("ruff", "mypy"):
        sandbox.stand_in(root / ".venv/bin" / name)
    return root


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("where", ["installed", "uninstalled"])
def test_help_prints_usage_and_does_nothing_else(
    name: str, where: str, sandbox: Sandbox, request: pytest.FixtureRequest
) -> None:
    root = REPO if where == "installed" else request.getfixturevalue("uninstalled")
    done = sandbox.run(root / "scripts" / name, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower() or f"scripts/{name}" in done.stdout, done.stdout
    assert "All checks passed" not in done.stdout  # ruff's: scripts/lint did not lint
    sandbox.untouched()


@pytest.mark.parametrize("name", ["setup", "matrix", "bisect"])
def test_short_help_is_help(name: str, sandbox: Sandbox) -> None:
    done = sandbox.run(REPO / "scripts" / name, "-h")
    assert done.returncode == 0 and f"scripts/{name}" in done.stdout, done.stderr
    sandbox.untouched()


def test_help_after_double_dash_is_not_a_help_request(sandbox: Sandbox) -> None:
    """After `--` the words belong to pytest or a test: scripts/lint takes none, so it refuses
    them (instead of printing its help)."""
    done = sandbox.run(REPO / "scripts/lint", "--", "--help")
    assert done.returncode == 2 and "unknown arguments" in done.stderr
    sandbox.untouched()


@pytest.mark.parametrize("argv, shown", [
    (["--help"], ["merge", "ci", "export", "--accel"]),
    (["ci", "--help"], ["scripts/matrix ci", "github"]),
], ids=["run", "ci"])  # fmt: skip
def test_matrix_help_lists_its_subcommands(
    argv: list[str], shown: list[str], sandbox: Sandbox
) -> None:
    done = sandbox.run(REPO / "scripts/matrix", *argv)
    assert done.returncode == 0 and all(word in done.stdout for word in shown), done.stdout
    sandbox.untouched()


@pytest.mark.parametrize("argv, shown", [
    (["--help"], ["run", "step", "--demo"]),
    (["--demo", "--help"], ["scripts/bisect --demo", "--accel"]),
    (["step", "--help"], ["scripts/bisect step", "--accel"]),
], ids=["modes", "demo", "step"])  # fmt: skip
def test_bisect_help_lists_its_modes(argv: list[str], shown: list[str], sandbox: Sandbox) -> None:
    done = sandbox.run(REPO / "scripts/bisect", *argv)
    assert done.returncode == 0 and all(word in done.stdout for word in shown), done.stdout
    sandbox.untouched()


def test_netregress_help_is_its_own_then_pytests(sandbox: Sandbox) -> None:
    out = sandbox.run(REPO / "scripts/netregress", "--help").stdout
    ours, _, pytests = out.partition("pytest's options:")
    assert ours.startswith("usage: scripts/netregress") and "rootless" in ours
    assert "--version" in ours and "--summary" in pytests  # our plugin's pytest options too


def test_netregress_version_is_ours(sandbox: Sandbox, uninstalled: Path) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    installed = sandbox.run(REPO / "scripts/netregress", "--version")
    assert installed.stdout == f"netregress {importlib.metadata.version('netregress')}\n"
    assert sandbox.run(uninstalled / "scripts/netregress", "--version").stdout == (
        f"netregress {declared}\n"
    )
    sandbox.untouched()


# scripts/netregress runs pytest directly as root, through a user namespace otherwise.
NO_NAMESPACES = None if os.geteuid() == 0 else rootless.userns_problem()


@pytest.mark.skipif(NO_NAMESPACES is not None, reason=f"cannot run rootless: {NO_NAMESPACES}")
def test_netregress_default_selection_does_not_depend_on_the_disk(tmp_path: Path) -> None:
    """`--junitxml out.xml` names no test: tests/cases is collected whether out.xml exists
    or not (the old loop took an existing file for a test path, then collected everything)."""
    junit = tmp_path / "out.xml"
    argv = [sys.executable, "-m", "netregress.cli", "--co", "-q", "-p", "no:cacheprovider",
            "--junitxml", str(junit)]  # fmt: skip
    collected = []
    for _ in range(2):  # the first run writes out.xml
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        collected.append([line for line in done.stdout.splitlines() if "::" in line])
    assert junit.exists()
    assert collected[0] == collected[1] and collected[0]
    assert all(nodeid.startswith("tests/cases/") for nodeid in collected[0])


@pytest.mark.skipif(NO_NAMESPACES is not None, reason=f"cannot run rootless: {NO_NAMESPACES}")
def test_netregress_lists_a_skip_once(tmp_path: Path, opted_in: None) -> None:
    """The netregress summary gives every skip with its reason; pytest's -rs would repeat it."""
    (tmp_path / "test_skip.py").write_text(
        "import pytest\n\n\ndef test_one():\n    pytest.skip('no such feature here')\n"
    )
    argv = [sys.executable, "-m", "netregress.cli", "-n", "0", "-p", "no:cacheprovider",
            f"--html={tmp_path / 'report.html'}", str(tmp_path / "test_skip.py")]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("no such feature here") == 1, done.stdout
