# SPDX-License-Identifier: GPL-2.0-only
"""The one error root, and the entry points' contract.

Every failure a user can cause (missing tool, no privileges, bad input, a kernel without a
feature, a bad script) is raised as a :class:`NetregressError` subclass — the namespace
library's (``netns.errors``), the kernel matrix's ``KernelsError``, the packetdrill engine's
errors — so every ``scripts/`` entry point (:func:`run_cli`) and the pytest plugins print one
clear line instead of a traceback.
"""

import sys
from collections.abc import Callable


class NetregressError(Exception):
    """Base class: the message alone must tell the user what went wrong and what to do."""


class MissingTool(NetregressError):
    """A program the suite needs is not installed."""


def run_cli(
    prog: str, body: Callable[[], int], *, interrupted: str = "interrupted", status: int = 2
) -> int:
    """Run an entry point's *body*: a NetregressError is ``prog: message`` and exit *status*,
    a Ctrl-C is ``prog: interrupted`` and exit 130 — never a traceback. Anything else is a bug
    of ours and keeps its traceback."""
    try:
        return body()
    except NetregressError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)
        return 130
