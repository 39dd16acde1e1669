# SPDX-License-Identifier: GPL-2.0-only
"""Scheduling priority: a child held at idle priority until lifted, and the autogroup it
leads (never ours) held back with it."""

import os
from pathlib import Path

import pytest

from netregress import priority, process


def _autogroup_nice(pid: int) -> int | None:
    """The nice value of *pid*'s autogroup; None where the kernel has no autogroups, or where
    *pid* is in the machine-wide default group (no session of its own ever started one, as
    under a CI runner), which the kernel shows as an empty file."""
    try:
        fields = Path(f"/proc/{pid}/autogroup").read_text().split()
    except FileNotFoundError:
        return None
    return int(fields[-1]) if fields else None


@pytest.mark.skipif(os.geteuid() != 0, reason="lifting a priority needs CAP_SYS_NICE")
def test_idle_priority_holds_a_session_child_back_until_lifted() -> None:
    """Policy and autogroup both: alone in its session's autogroup, a SCHED_IDLE child would
    still get an equal share of the CPU. Lifted, the autogroup takes the child's nice value."""

    def nice_and_idle() -> None:
        os.nice(10)
        priority.idle_priority()

    proc = process.Process(["sleep", "30"], new_session=True, setup=nice_and_idle)
    try:
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
        assert _autogroup_nice(proc.pid) in (19, None)
        priority.lift_priority(proc.pid)
        assert os.sched_getscheduler(proc.pid) == os.SCHED_OTHER
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == 10
        assert _autogroup_nice(proc.pid) in (10, None)
    finally:
        proc.stop()
    with pytest.raises(ProcessLookupError):
        priority.lift_priority(proc.pid)


def test_idle_priority_never_touches_the_parents_autogroup() -> None:
    """A child in our session shares our autogroup: only its own policy changes."""
    ours = _autogroup_nice(os.getpid())
    proc = process.Process(["sleep", "30"], setup=priority.idle_priority)
    try:
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
        assert _autogroup_nice(os.getpid()) == ours
    finally:
        proc.stop()
