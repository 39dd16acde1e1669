# SPDX-License-Identifier: GPL-2.0-only
"""``nstat`` snapshots and typed deltas per namespace.

Each namespace has its own SNMP/netstat counters, which is what lets a case assert
"TcpExtTCPWqueueTooBig did not increase" about its own traffic only. Snapshots are taken
with ``nstat -asz`` (absolute, all zeros included, no history file touched).
"""

import difflib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from . import artifacts
from .handle import Handle

SNAPSHOT_SUFFIX = "-nstat.json"  # a Watch's file in the artifact folder: ``02-b-nstat.json``


def snapshot(ns: Handle) -> dict[str, int]:
    """All SNMP/netstat counters of *ns* right now."""
    out = ns.run(["nstat", "-asz", "--json"]).stdout
    return {k: int(v) for k, v in json.loads(out)["kernel"].items()}


def moved(ns: Handle, name: str, since: Mapping[str, int]) -> int:
    """How far counter *name* of *ns* has moved since the snapshot *since*, read now.

    For a case that waits for an outcome while a counter can already settle its verdict
    (counters only grow): it stops waiting instead of running into its deadline.
    """
    return snapshot(ns)[name] - since[name]


def grown(ns: Handle, name: str, by: int) -> Callable[[], bool]:
    """A check for a poll (a ping's *hopeless*): True once counter *name* of *ns* has grown by
    *by* since this call, e.g. one drop per request sent."""
    since = snapshot(ns)
    return lambda: moved(ns, name, since) >= by


class Delta(Mapping[str, int]):
    """after − before for every counter; unknown names raise with a suggestion.

    A typo in a counter name must fail loudly (with "did you mean …"), not read as 0 and
    make an oracle pass vacuously.
    """

    def __init__(self, before: Mapping[str, int], after: Mapping[str, int]) -> None:
        self.before = dict(before)
        self.after = dict(after)

    def __getitem__(self, name: str) -> int:
        if name not in self.after:
            close = difflib.get_close_matches(name, self.after, n=3)
            hint = (
                f"; did you mean {', '.join(close)}?"
                if close
                else " (this kernel does not have it)"
            )
            raise KeyError(f"no counter {name!r}{hint}")
        return self.after[name] - self.before.get(name, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self.after)

    def __len__(self) -> int:
        return len(self.after)

    def nonzero(self) -> dict[str, int]:
        """Only the counters that moved: what a failure report should show."""
        return {k: v for k in self.after if (v := self[k])}


class Watch:
    """``with ns.nstat() as delta:`` — *delta* is filled in when the block ends.

    Both snapshots are also written to the test's artifact folder.
    """

    def __init__(self, ns: Handle) -> None:
        self.ns = ns
        self.delta = Delta({}, {})

    def __enter__(self) -> Delta:
        self.delta.before = snapshot(self.ns)
        return self.delta

    def __exit__(self, *exc: object) -> None:
        self.delta.after = snapshot(self.ns)
        path = artifacts.new_path(self.ns.label, SNAPSHOT_SUFFIX)
        path.write_text(
            json.dumps(
                {
                    "moved": self.delta.nonzero(),
                    "before": self.delta.before,
                    "after": self.delta.after,
                },
                indent=1,
            )
        )


def moved_in(path: Path) -> dict[str, int]:
    """The counters a :class:`Watch`'s file says moved, by name (non-zero deltas only), for a
    failure's evidence page; empty when the file is not one (unreadable, another format)."""
    try:
        moved = json.loads(path.read_text())["moved"]
        return {str(name): int(delta) for name, delta in moved.items() if int(delta)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
