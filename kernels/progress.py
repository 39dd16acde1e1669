# SPDX-License-Identifier: GPL-2.0-only
"""Status lines while kernels are fetched, booted and run.

Why a callback: the matrix shows one live line per kernel (fetching / booting / running /
done, with elapsed time); `pytest --kernel` prints the same steps as plain lines. On a terminal
the board redraws in place; in CI logs it prints one line per change instead.
"""

import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

Status = Callable[[str], None]
REDRAW_SECONDS = 0.5


class Board:
    """One line per kernel: its current step and the time since it left the queue."""

    def __init__(self, names: list[str], stream: TextIO = sys.stderr) -> None:
        self._names = names
        self._stream = stream
        self._tty = stream.isatty()
        self._state = {name: "queued" for name in names}
        self._started: dict[str, float] = {}
        self._finished: dict[str, float] = {}
        self._lock = threading.Lock()
        self._drawn = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._redraw_loop, daemon=True)

    def status_for(self, name: str) -> Status:
        """The status callback of one kernel."""
        return lambda text: self.update(name, text)

    def update(self, name: str, text: str, final: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            self._started.setdefault(name, now)
            if final:
                self._finished[name] = now
            self._state[name] = text
            if not self._tty:
                print(self._line(name, now), file=self._stream, flush=True)

    def _line(self, name: str, now: float) -> str:
        start = self._started.get(name)
        end = self._finished.get(name, now)
        elapsed = f"{end - start:6.1f}s" if start is not None else "      -"
        width = max(len(n) for n in self._names)
        return f"  {name:<{width}}  {elapsed}  {self._state[name]}"

    def _redraw(self) -> None:
        with self._lock:
            now = time.monotonic()
            width = shutil.get_terminal_size().columns - 1  # a wrapped line breaks the redraw
            lines = [self._line(name, now)[:width] for name in self._names]
            up = f"\x1b[{self._drawn}F" if self._drawn else ""
            self._stream.write(up + "".join(f"\x1b[2K{line}\n" for line in lines))
            self._stream.flush()
            self._drawn = len(lines)

    def _redraw_loop(self) -> None:
        while not self._stop.wait(REDRAW_SECONDS):
            self._redraw()

    def __enter__(self) -> "Board":
        if self._tty:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._tty:
            self._thread.join()
            self._redraw()
