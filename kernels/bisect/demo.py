# SPDX-License-Identifier: GPL-2.0-only
"""The bisect demo: a synthetic 6.1 history with a known culprit, and a bisect that must find it.

Why synthetic: it proves the whole chain (git bisect run → incremental build → VM boot → the
C01 case → verdict) lands on the right commit without cloning the kernel's history. The
history is a throwaway git repo in the cache: Debian's linux-source-6.1 as the good base,
then harmless commits (notes, a comment in a compiled file) around the one commit that
applies kernels/mutants/tcp-c01-fragment-2019-wqueue-limit.patch.
"""

import argparse
import subprocess
import sys
from pathlib import Path

from kernels.acquire.from_source.source import debian_tarball, extract_tarball, git_tree
from kernels.bisect.bisect import bisect, git
from kernels.bisect.c01 import CASE, PACKAGE, PATCH
from kernels.bisect.vmtest import add_run_options
from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from netregress.errors import run_cli

TAGS = ("demo-good", "demo-culprit", "demo-bad")
_IDENTITY = ["-c", "user.name=netregress demo", "-c", "user.email=netregress@localhost"]


def _say(message: str) -> None:
    print(f"bisect demo: {message}", file=sys.stderr, flush=True)


def _commit(tree: Path, message: str) -> None:
    # --force: Debian's top-level .gitignore ignores everything outside debian/.
    git(tree, "add", "--all", "--force")
    git(tree, *_IDENTITY, "commit", "-q", "-m", message)


def _note(tree: Path, number: int) -> None:
    """A harmless change that git sees but the build does not compile."""
    note = tree / "Documentation/netregress-demo" / f"note-{number}.txt"
    note.parent.mkdir(exist_ok=True)
    note.write_text(f"netregress bisect demo: harmless commit {number}\n")


def _comment(tree: Path, number: int) -> None:
    """A harmless change in a compiled file: the next step really rebuilds something."""
    path = tree / "net/core/dev.c"
    path.write_text(path.read_text() + f"/* netregress bisect demo: harmless commit {number} */\n")


def _history(tree: Path) -> None:
    """good base → note → comment → culprit (the bug patch) → note → comment (bad)."""
    _say(f"creating the synthetic history in {tree} (a few minutes: git add of the whole tree)")
    extract_tarball(debian_tarball(PACKAGE), tree)
    git(tree, "init", "-q")
    git(tree, "config", "gc.auto", "0")  # no background repack of 80k objects during builds
    _commit(tree, f"{PACKAGE} as shipped by Debian (demo base)")
    git(tree, "tag", TAGS[0])
    _note(tree, 1)
    _commit(tree, "demo: harmless note 1")
    _comment(tree, 2)
    _commit(tree, "demo: harmless comment 2 (net/core/dev.c)")
    proc = subprocess.run(
        ["git", "-C", str(tree), "apply", str(PATCH)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise KernelsError(f"cannot apply {PATCH.name} to the demo tree: {proc.stderr.strip()}")
    _commit(tree, "tcp: tcp_fragment() 2019 memory limit again (the demo culprit)")
    git(tree, "tag", TAGS[1])
    _note(tree, 4)
    _commit(tree, "demo: harmless note 4")
    _comment(tree, 5)
    _commit(tree, "demo: harmless comment 5 (net/core/dev.c)")
    git(tree, "tag", TAGS[2])


def demo_tree() -> Path:
    """The demo repo, created on first use (and again if an earlier creation was cut short)."""
    root = cache_dir("bisect-demo")
    tree = root / "linux-6.1"
    with locked(root / "create.lock"):
        complete = (tree / ".git").is_dir() and all(
            subprocess.run(["git", "-C", str(tree), "rev-parse", "-q", "--verify", tag],
                           capture_output=True).returncode == 0
            for tag in TAGS
        )  # fmt: skip
        if not complete:
            _history(tree)
    return tree


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="scripts/bisect --demo", description=__doc__.splitlines()[0])
    add_run_options(cli, CASE)
    args = cli.parse_args(argv)
    return run_cli("bisect demo", lambda: _demo(args))


def _demo(args: argparse.Namespace) -> int:
    tree = demo_tree()
    culprit = git(tree, "rev-parse", TAGS[1])
    step_args = ["-j", str(args.jobs), "--accel", args.accel, "--", *args.pytest_args]
    found = bisect(git_tree(tree), TAGS[0], TAGS[2], step_args)
    subject = git(tree, "log", "-1", "--format=%h %s", found)
    if found != culprit:
        print(f"bisect demo: FAILED: landed on {subject}, the culprit is {culprit[:12]}")
        return 1
    print(f"bisect demo: OK: landed on {subject}, the commit that applied the bug patch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
