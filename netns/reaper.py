"""Remove what runs that died (SIGKILL, power loss) left behind — and nothing else.

A namespace is ours only if its name parses as ``nr<pid>s<starttime>-…`` (see
netns.naming); it is a leftover only if that exact process no longer exists. Processes
still running inside a leftover namespace (a tcpdump orphaned by the SIGKILL) were started
by that run, so they are killed by PID before the namespace goes.
"""

import os
import signal

from pyroute2 import netns as pyroute2_netns

from . import naming
from .namespace import NETNS_DIR


def leftover_namespaces() -> list[str]:
    """Names in /run/netns that carry our prefix and whose owner process is gone."""
    try:
        names = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    leftovers = []
    for name in names:
        owner = naming.owner_of(name)
        if owner is not None and not owner.alive():
            leftovers.append(name)
    return sorted(leftovers)


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
        path = os.path.join(NETNS_DIR, name)
        for pid in pids_in(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            pyroute2_netns.remove(name)
        except (FileNotFoundError, OSError):
            continue  # a concurrent run (or xdist worker) reaped it first
        reaped.append(name)
    return reaped
