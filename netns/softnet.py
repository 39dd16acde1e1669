# SPDX-License-Identifier: GPL-2.0-only
"""Per-CPU receive-path counters and the machine-global knobs that steer them.

``/proc/net/softnet_stat`` and ``/proc/softirqs`` are per CPU and global to the machine (not
per namespace), so cases read them as deltas and assert thresholds that other traffic can
only push further, never exact counts. ``net.core.netdev_budget`` and
``net.core.netdev_max_backlog`` exist only in the root namespace: :class:`GlobalSysctls`
changes them only inside a throw-away matrix VM guest and always restores them.
"""

from dataclasses import dataclass

from netregress.errors import NetregressError

from .commands import cmd
from .features import in_netregress_vm

# Columns of /proc/net/softnet_stat (stable since 2.6; newer kernels append more).
PROCESSED, DROPPED, TIME_SQUEEZE, RECEIVED_RPS = 0, 1, 2, 9


def softnet_stat() -> list[list[int]]:
    """One row per online CPU (in CPU order), hex columns decoded."""
    with open("/proc/net/softnet_stat", encoding="ascii") as f:
        return [[int(col, 16) for col in line.split()] for line in f if line.strip()]


def softirqs(kind: str = "NET_RX") -> list[int]:
    """Per-CPU count of one softirq kind from /proc/softirqs."""
    with open("/proc/softirqs", encoding="ascii") as f:
        for line in f:
            name, *counts = line.split()
            if name == f"{kind}:":
                return [int(c) for c in counts]
    raise NetregressError(f"/proc/softirqs has no {kind} row")


@dataclass
class Snapshot:
    """softnet_stat and NET_RX counts at one moment; ``later - earlier`` gives deltas."""

    softnet: list[list[int]]
    net_rx: list[int]

    @classmethod
    def take(cls) -> "Snapshot":
        return cls(softnet_stat(), softirqs("NET_RX"))

    def column(self, col: int) -> list[int]:
        return [row[col] if col < len(row) else 0 for row in self.softnet]

    def __sub__(self, earlier: "Snapshot") -> "Snapshot":
        return Snapshot(
            [
                [a - b for a, b in zip(now, then, strict=True)]
                for now, then in zip(self.softnet, earlier.softnet, strict=True)
            ],
            [a - b for a, b in zip(self.net_rx, earlier.net_rx, strict=True)],
        )


GUEST_ONLY = (
    "{knob} is global to the machine (root namespace only); netregress changes it "
    "only inside a kernel-matrix VM guest (scripts/matrix), never on a host"
)


class GlobalSysctls:
    """``with GlobalSysctls({"net.core.netdev_budget": 1}):`` — VM guests only; restored.

    Refuses on a host: these knobs cannot be contained in a namespace.
    """

    def __init__(self, values: dict[str, int | str]) -> None:
        self.values = values
        self._saved: dict[str, str] = {}

    def __enter__(self) -> "GlobalSysctls":
        if not self.values:  # nothing to change: fine anywhere
            return self
        if not in_netregress_vm():
            raise NetregressError(GUEST_ONLY.format(knob=", ".join(self.values)))
        for key in self.values:
            self._saved[key] = cmd(["sysctl", "-n", key]).stdout.strip()
        cmd(["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in self.values.items())])
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved:
            cmd(["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in self._saved.items())])
            self._saved.clear()
