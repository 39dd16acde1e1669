"""The one exception type the kernel matrix raises for bad input or a broken environment.

Entry points catch it and print its message without a traceback: every message must say what
went wrong and what the user can do about it.
"""

import sys
from collections.abc import Callable


class KernelsError(Exception):
    """A problem the user can fix (bad name, missing tool, broken image, no network…)."""


def run_cli(prog: str, body: Callable[[], int], interrupted: str = "interrupted") -> int:
    """The entry points' contract: run *body*; a KernelsError is its message and exit 2, a
    Ctrl-C is *interrupted* and exit 130 — never a traceback."""
    try:
        return body()
    except KernelsError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)
        return 130
