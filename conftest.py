# SPDX-License-Identifier: GPL-2.0-only
"""Root conftest: this project's runs load netregress's pytest plugins from here.

They are opt-in (``netregress/plugins.py``), not ``pytest11`` entry points: installing the package
must not change a stranger's pytest (no privilege demands, no calibration, no reaping in
their sessions). Anyone else opts in with ``-p netregress.plugins``. Sessions our tests start in
temporary folders, outside this conftest's reach, get it through ``PYTEST_PLUGINS`` (the
``opted_in`` fixture).
"""

import pytest

pytest_plugins = ["netregress.plugins", "pytester"]

# docs/examples holds demo scripts that fail on some kernels on purpose (docs/html-report.md).
collect_ignore = ["docs"]


@pytest.fixture
def opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest sessions this test starts (pytester, or a subprocess in a folder outside this
    checkout) load our plugins as this project's runs do."""
    monkeypatch.setenv("PYTEST_PLUGINS", "netregress.plugins")


@pytest.fixture
def pytester(pytester: pytest.Pytester, opted_in: None) -> pytest.Pytester:
    """pytest's pytester, opted in to our plugins (see :func:`opted_in`)."""
    return pytester
