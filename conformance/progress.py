# SPDX-License-Identifier: GPL-2.0-only
"""Live progress on the terminal while a corpus runs (minutes, sometimes a 180 s hang).

On a terminal one counter line is rewritten in place; into a file or pipe (CI logs) every
finished run gets its own line, since carriage returns would garble a log.
"""

import sys
import threading
from typing import TextIO


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, label: str = "") -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.label = label
        self._lock = threading.Lock()

    def step(self, what: str, verdict: str, seconds: float) -> None:
        with self._lock:
            self.done += 1
            width = len(str(self.total))
            line = (
                f"{self.label}[{self.done:{width}}/{self.total}] {verdict:<7} "
                f"{seconds:6.2f}s {what}"
            )
            if self.tty:
                self.stream.write("\r\033[K" + line[: _columns() - 1])
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def note(self, text: str) -> None:
        """A line that stays (a phase change), not overwritten by the counter."""
        with self._lock:
            self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
            self.stream.flush()

    def finish(self) -> None:
        if self.tty and self.done:
            with self._lock:
                self.stream.write("\n")
                self.stream.flush()


def _columns() -> int:
    import shutil

    return shutil.get_terminal_size((100, 24)).columns
