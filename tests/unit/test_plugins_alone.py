# SPDX-License-Identifier: GPL-2.0-only
"""Each netregress plugin named alone (``-p NAME``) loads and runs a test, and brings along no
other netregress plugin, neither registered nor imported, beyond the ones it names as its
dependencies, and without a warning (a plugin imported before pytest could rewrite its asserts
says so): the plugins share facts and hooks (netregress/session.py), not imports."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from netns.variants import broken
from netregress import plugins

ROOT = Path(__file__).resolve().parents[2]
# What a plugin brings along on purpose: the plugins its own `pytest_plugins` names.
DEPENDS = {"kernels.corpus.pytest_plugin": ["packetdrill.pytest_plugin"]}
STAND_IN = "stand_in_plugin"  # a plugin of the broken variant, written next to the test

_PROBE = """
import sys

def test_alone(request):
    manager = request.config.pluginmanager
    names = {names!r}
    loaded = sorted(name for name in names if manager.get_plugin(name) is not None)
    imported = sorted(name for name in names if name in sys.modules)
    assert loaded == imported == {expected!r}
"""


@pytest.mark.parametrize(
    ("plugin", "stand_in"),
    [
        *((name, "") for name in plugins.pytest_plugins),
        broken(
            STAND_IN,
            "from netns.pytest_plugin import ready\n",
            id="imports-a-plugin",
            why="a plugin that imports another one brings it along",
        ),
    ],
)
def test_each_plugin_works_named_alone(plugin: str, stand_in: str, tmp_path: Path) -> None:
    expected = sorted([plugin, *DEPENDS.get(plugin, [])])
    names = [*plugins.pytest_plugins, STAND_IN]
    (tmp_path / f"{STAND_IN}.py").write_text(stand_in)
    (tmp_path / "test_alone.py").write_text(_PROBE.format(names=names, expected=expected))
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", plugin,
         "test_alone.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "warning" not in done.stdout, done.stdout
