# SPDX-License-Identifier: GPL-2.0-only
"""Programs: looked up before they start (a missing one names its package), and shown as the
command a user can paste."""

import pytest

from netregress import programs
from netregress.errors import MissingTool


def test_command_line_splits_and_enters_the_namespace() -> None:
    args = programs.program("echo 'a b'")
    assert programs.command_line(args, "n1") == ["ip", "netns", "exec", "n1", "echo", "a b"]
    assert programs.command_line(args) == ["echo", "a b"]
    with pytest.raises(MissingTool, match="scripts/setup"):
        programs.program(["netregress-no-such-tool"])
