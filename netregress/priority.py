# SPDX-License-Identifier: GPL-2.0-only
"""Scheduling priority of a child: idle while it gets ready ahead of its turn, normal after.

Why: work started ahead (a packetdrill engine warmed up for the next run, a VM booted before
its slot) must never delay what runs now on a small machine; once its turn comes it competes
normally again.
"""

import errno
import os

_AUTOGROUP_IDLE = 19  # the lowest nice value of a whole autogroup (/proc/PID/autogroup)


def idle_priority() -> None:
    """A child's *setup* (it runs before exec): run it only on CPU time nobody else wants
    (``SCHED_IDLE``), so that work started ahead of its turn never delays what runs now;
    :func:`lift_priority` ends that (``CAP_SYS_NICE``).

    Why the autogroup too: where the kernel groups tasks by session (``CONFIG_SCHED_AUTOGROUP``,
    on in most distributions) a child in a session of its own (``new_session``) is alone in its
    autogroup, and autogroups share the CPU by their own nice value, whatever the nice values
    and policies inside (a busy loop in another session halves a task's speed at nice 10 or
    ``SCHED_IDLE`` alike). So a child that leads its own session also gives its autogroup the
    lowest weight. A child in our session shares our autogroup, which is left alone."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    if os.getsid(0) == os.getpid():
        _set_autogroup_nice(os.getpid(), _AUTOGROUP_IDLE)


def lift_priority(pid: int) -> None:
    """Undo :func:`idle_priority` for process *pid*: every thread back to
    ``SCHED_OTHER`` (nice values kept), and its own autogroup, if it leads one, to the process's
    nice value. The threads are lifted one by one, so it looks again until none is left idle
    (an idle thread may have started another meanwhile). Raises PermissionError without
    ``CAP_SYS_NICE``, ProcessLookupError once the process is gone."""
    while True:
        try:
            threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
        except FileNotFoundError:
            raise ProcessLookupError(errno.ESRCH, f"no process {pid}") from None
        lifted = 0
        for tid in threads:
            try:
                if os.sched_getscheduler(tid) == os.SCHED_IDLE:
                    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                    lifted += 1
            except ProcessLookupError:  # that thread ended
                continue
        if not lifted:
            break
    if os.getsid(pid) == pid:
        _set_autogroup_nice(pid, os.getpriority(os.PRIO_PROCESS, pid))


def _set_autogroup_nice(pid: int, nice: int) -> None:
    """Without autogroups (no such file) there is nothing to set."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as handle:
            handle.write(str(nice))
    except FileNotFoundError:
        pass
