"""Exceptions that carry a message a user can act on, and the entry points' contract.

Every failure a user can cause (missing tool, no privileges, bad input, a kernel without a
feature) is raised as a :class:`NetregressError` subclass — the library's own here, the kernel
matrix's ``KernelsError``, the packetdrill engine's errors — so every ``scripts/`` entry point
(:func:`run_cli`) and the pytest plugins print one clear line instead of a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


class NetregressError(Exception):
    """Base class: the message alone must tell the user what went wrong and what to do."""


class CmdError(NetregressError):
    """A command exited non-zero; the message names the command, namespace and stderr."""

    def __init__(self, argv: list[str], returncode: int, stdout: str, stderr: str,
                 ns: str | None = None) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.ns = ns
        where = f" in netns {ns}" if ns else ""
        detail = (stderr or stdout).strip()
        super().__init__(f"command failed{where} (exit {returncode}): {' '.join(argv)}"
                         + (f"\n{detail}" if detail else ""))


class MissingTool(NetregressError):
    """A program the suite needs is not installed."""


class NotPrivileged(NetregressError):
    """The process lacks root / CAP_NET_ADMIN / CAP_SYS_ADMIN."""


class FeatureMissing(NetregressError):
    """The running kernel lacks a feature (ipip, gre, netem, …) a case needs."""


def run_cli(prog: str, body: Callable[[], int], *, interrupted: str = "interrupted",
            status: int = 2) -> int:
    """Run an entry point's *body*: a NetregressError is ``prog: message`` and exit *status*,
    a Ctrl-C is ``prog: interrupted`` and exit 130 — never a traceback."""
    try:
        return body()
    except NetregressError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)
        return 130
