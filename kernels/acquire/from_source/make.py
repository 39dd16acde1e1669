# SPDX-License-Identifier: GPL-2.0-only
"""Running kbuild: niced, logged to a file, with a one-line live progress.

Why niced: other engineers run timing-sensitive tests on the same small machine. Why a log
file plus a compact line: a cold build prints tens of thousands of lines; the user wants the
phase, the elapsed time and that it is moving, and on failure the tail and where the rest is.
make runs through the process core (:mod:`netregress.process`): a build outlives no killed run.
"""

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from kernels.errors import KernelsError
from netregress.process import Process

NICE = 10
FAIL_TAIL = 30
_QUIET_STEP = ("  CC", "  LD", "  AR", "  AS", "  OBJCOPY", "  HOSTCC", "  GEN", "  BUILD")


def elapsed(seconds: float) -> str:
    """`1m05s` style, what every progress line and the final report use."""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class _Progress:
    """Rewrites one terminal line (every second), or prints a line every 30 s when logged."""

    def __init__(self, phase: str, obj: Path) -> None:
        self.phase = phase
        self.prefix = f"{obj}/"
        self.start = time.monotonic()
        self.steps = 0
        self.last = ""
        self.tty = sys.stderr.isatty()
        self.shown = 0.0

    def step(self, line: str) -> None:
        self.steps += 1
        self.last = " ".join(line.split()[:2]).replace(self.prefix, "")
        now = time.monotonic()
        if now - self.shown >= (1 if self.tty else 30):
            self.shown = now
            self._show()

    def _show(self, end: str = "") -> None:
        text = f"{self.phase}: {elapsed(time.monotonic() - self.start)}, {self.steps} steps"
        text += f", {self.last}" if self.last else ""
        if self.tty:
            sys.stderr.write("\r\033[K" + text[:150] + end)
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def done(self) -> float:
        self.last = "done"
        self._show(end="\n")
        return time.monotonic() - self.start


def run_make(
    tree: Path,
    obj: Path,
    targets: list[str],
    log: Path,
    phase: str,
    jobs: int,
    env: dict[str, str] | None = None,
) -> float:
    """`make -C tree O=obj targets` under nice; returns the seconds it took.

    Raises KernelsError with the last lines of the log (and its path) when make fails.
    """
    argv = ["nice", "-n", str(NICE), "make", "-C", str(tree), f"O={obj}", f"-j{jobs}", *targets]
    progress = _Progress(phase, obj)
    tmp = obj / "tmp"  # the compiler's temporary files stay in the cache too
    tmp.mkdir(exist_ok=True)
    with log.open("a", buffering=1) as out:  # line-buffered: `tail -f` the log works
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        proc = Process(
            argv,
            stdin=None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "LC_ALL": "C", "TMPDIR": str(tmp), **(env or {})},
        )
        try:
            assert proc.stdout is not None
            for line in io.TextIOWrapper(proc.stdout, errors="replace"):
                out.write(line)
                if line.startswith(_QUIET_STEP):
                    progress.step(line)
            code = proc.wait()
        finally:
            proc.stop()
    seconds = progress.done()
    if code != 0:
        lines = log.read_text(errors="replace").splitlines()[-FAIL_TAIL:]
        raise KernelsError(
            f"{phase} failed (make exit status {code}); the last {len(lines)} lines of {log}:\n"
            + "\n".join(lines)
        )
    return seconds


def query(tree: Path, obj: Path, target: str) -> str:
    """The one-line output of an informational target such as `kernelrelease`."""
    proc = subprocess.run(
        ["make", "-s", "-C", str(tree), f"O={obj}", target],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise KernelsError(f"make {target} failed in {obj}: {proc.stderr.strip()}")
    return proc.stdout.strip().splitlines()[-1]
