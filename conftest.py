"""Root conftest: this project's runs load netregress's pytest plugins from here.

They are opt-in, not ``pytest11`` entry points: installing the package must not change a
stranger's pytest (no privilege demands, no calibration, no reaping in their sessions).
Anyone else opts in with ``-p netns.pytest_plugin`` (and the others below). pytester runs
(the plugins' own tests) get the same list through ``PYTEST_PLUGINS``, because their
temporary directories are outside this conftest's reach.
"""

import pytest

# netns.report_html before kernels.pytest_plugin, which imports it (pytest can only rewrite
# the asserts of a plugin it imports itself).
PLUGINS = ["netns.pytest_plugin", "netns.packetdrill.pytest_plugin", "netns.report_html",
           "kernels.pytest_plugin"]
pytest_plugins = [*PLUGINS, "pytester"]

# docs/examples holds demo scripts that fail on some kernels on purpose (docs/html-report.md).
collect_ignore = ["docs"]


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's pytester, whose runs (in-process or subprocess) load our plugins as ours do."""
    monkeypatch.setenv("PYTEST_PLUGINS", ",".join(PLUGINS))
    return pytester
