# SPDX-License-Identifier: GPL-2.0-only
"""Byte-code for the checkout's own modules, compiled on the host once for every guest.

Why: a TCG guest runs Python 15–30× slower, and a module without byte-code is compiled again
by every process that imports it. The guest starts many (its pytest, and a packetdrill engine
per script run), each importing dozens of project modules: compiling the netns package alone
took 27 s in a loaded guest. pip and the interpreter's installer wrote byte-code for the
installed packages and the standard library; only the checkout's own files lack it when the
host runs with PYTHONDONTWRITEBYTECODE or has not imported them yet. The guest sees the
host's tree read-only, so the host writes it into the usual (git-ignored) `__pycache__`
folders; a later run only compares timestamps. A tree the host cannot write is left as it
is: the guest then compiles as before, nothing fails.
"""

import compileall
import functools
from pathlib import Path

from kernels.paths import REPO_ROOT


@functools.cache
def precompile(root: Path = REPO_ROOT) -> None:
    """Compile every module of the checkout at `root`, skipping hidden folders and
    virtualenvs (their packages were compiled when installed). Once per process: every
    kernel of a matrix run calls it, and the tree does not change during the run."""
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or (entry / "pyvenv.cfg").exists():
            continue
        if entry.is_dir():
            compileall.compile_dir(entry, quiet=2)
        elif entry.suffix == ".py":
            compileall.compile_file(entry, quiet=2)
