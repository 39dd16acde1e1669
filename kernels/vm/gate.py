# SPDX-License-Identifier: GPL-2.0-only
"""The gate a guest started ahead of its turn waits at, before its first test.

Why before the first test, not before pytest: booting, Python's start and the collection are
the ~20 s worth doing ahead (kernels/matrix/slots.py); the tests must only run once the guest
has its slot and full priority, or their timing would be measured on a starved CPU.

Host side (kernels/vm/qemu.py): a guest booted ahead gets ``NETREGRESS_GATE`` naming a file in
its output share, and the launcher creates the file when the guest's turn comes, after lifting
its processes' priority. Guest side: ``-p kernels.vm.gate`` holds the test loop until the file
exists. Without the variable (every guest that starts with a slot, every other use of the
launcher) the plugin does nothing.

A guest booted ahead may get no CPU for tens of seconds on a busy machine, and its kernel's
stall detectors then report the starvation as a soft lockup or an RCU stall, which the console
scan rightly calls a crash (seen once: bullseye 5.10, "soft lockup - CPU#0 stuck for 22s" in
insmod while the machine was loaded). So such a guest boots with the detectors off
(:data:`DETECTORS_OFF`) and gets them back when its gate opens, before its first test: every
test runs under the same detectors as in a guest that started with a slot.
"""

import os
import time

import pytest

from kernels.vm import phases

ENV = "NETREGRESS_GATE"
# Kernel command line of a guest booted ahead: the soft lockup, RCU stall and hung task
# detectors off (`sysctl.` parameters exist since 5.8; an older kernel ignores it).
DETECTORS_OFF = (
    "nowatchdog",
    "rcupdate.rcu_cpu_stall_suppress=1",
    "sysctl.kernel.hung_task_timeout_secs=0",
)
# What turns them back on: (file, value). 120 s is the kernel's default hung task timeout
# (CONFIG_DEFAULT_HUNG_TASK_TIMEOUT), Debian's too. A file a kernel lacks is skipped.
DETECTORS_ON = (
    ("/proc/sys/kernel/watchdog", "1"),
    ("/sys/module/rcupdate/parameters/rcu_cpu_stall_suppress", "0"),
    ("/proc/sys/kernel/hung_task_timeout_secs", "120"),
)
FILE = "gate-open"  # in the output share
_POLL = 0.05  # seconds: a few ms of CPU per second in a TCG guest, ~25 ms after the turn came


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    path = os.environ.get(ENV)
    if path is None or session.config.option.collectonly:
        return
    while not os.path.exists(path):
        time.sleep(_POLL)
    # Global kernel knobs: only a guest's own (NETREGRESS_IN_VM, as netns.features reads it).
    for name, value in DETECTORS_ON if os.environ.get("NETREGRESS_IN_VM") else ():
        try:
            with open(name, "w") as knob:
                knob.write(value)
        except FileNotFoundError:
            pass
    phases.stamp("gate-opened")
