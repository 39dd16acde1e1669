# SPDX-License-Identifier: GPL-2.0-only
"""Remove the namespaces runs that died (SIGKILL, power loss) left behind — and nothing else.

Which names are a dead run's is the process core's rule (:func:`netregress.process.leftovers`:
our prefix, owner gone). Processes still running inside a leftover namespace (a tcpdump
orphaned by the SIGKILL) were started by that run, so they are killed by PID before the
namespace goes.
"""

import os

from pyroute2 import netns as pyroute2_netns

from netregress import process
from netregress.netns_entry import NETNS_DIR


def leftover_namespaces() -> list[str]:
    """Names in /run/netns that carry our prefix and whose owner process is gone."""
    try:
        return process.leftovers(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def pids_in(ns_path: str) -> list[int]:
    """PIDs whose network namespace is the one mounted at *ns_path*."""
    try:
        target = os.stat(ns_path)
    except FileNotFoundError:
        return []
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{entry}/ns/net")
        except OSError:
            continue
        if (st.st_ino, st.st_dev) == (target.st_ino, target.st_dev):
            pids.append(int(entry))
    return pids


def reap() -> list[str]:
    """Kill processes inside, then delete, every leftover namespace; returns their names."""
    reaped = []
    for name in leftover_namespaces():
        process.kill(pids_in(os.path.join(NETNS_DIR, name)))
        try:
            pyroute2_netns.remove(name)
        except (FileNotFoundError, OSError):
            continue  # a concurrent run (or xdist worker) reaped it first
        reaped.append(name)
    return reaped
