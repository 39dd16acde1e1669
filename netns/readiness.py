# SPDX-License-Identifier: GPL-2.0-only
"""Before a test builds namespaces: this process may, and dead runs' leftovers are gone.

Why a module of its own and not the namespaces plugin: every plugin whose tests make
namespaces (fixtures, packetdrill scripts, the kernel's corpus) asks it, and a plugin must not
import another plugin to do so (each can be loaded alone).
"""

import pytest

from netregress.errors import NetregressError

from . import privilege, reaper

_READY_KEY = pytest.StashKey[bool]()


def ready(config: pytest.Config) -> None:
    """Fail the test with the fix if this process cannot build namespaces, and reap dead runs'
    leftovers once per process (xdist worker), only when a test needs it."""
    problem = privilege.namespace_problem()
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    if config.stash.get(_READY_KEY, False):
        return
    try:
        reaped = reaper.reap()
    except NetregressError as exc:
        pytest.fail(str(exc), pytrace=False)
    config.stash[_READY_KEY] = True
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reaped and reporter is not None:
        reporter.write_line(f"netregress: reaped {len(reaped)} namespace(s) left by dead runs")
