"""The gate a guest started ahead of its turn waits at, before its first test.

Why before the first test, not before pytest: booting, Python's start and the collection are
the ~20 s worth doing ahead (kernels/matrix/slots.py); the tests must only run once the guest
has its slot and full priority, or their timing would be measured on a starved CPU.

Host side (kernels/vm/qemu.py): a guest booted ahead gets ``NETREGRESS_GATE`` naming a file in
its output share, and the launcher creates the file when the guest's turn comes, after lifting
its processes' priority. Guest side: ``-p kernels.vm.gate`` holds the test loop until the file
exists. Without the variable (every guest that starts with a slot, every other use of the
launcher) the plugin does nothing.
"""

import os
import time

import pytest

from kernels.vm import phases

ENV = "NETREGRESS_GATE"
FILE = "gate-open"  # in the output share
_POLL = 0.05  # seconds: a few ms of CPU per second in a TCG guest, ~25 ms after the turn came


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    path = os.environ.get(ENV)
    if path is None or session.config.option.collectonly:
        return
    while not os.path.exists(path):
        time.sleep(_POLL)
    phases.stamp("gate-opened")
