# SPDX-License-Identifier: GPL-2.0-only
"""cmd(): results, failures that read like a shell session, missing tools."""

import pytest

from netns import CmdError, MissingTool, cmd


def test_cmd_captures_output() -> None:
    result = cmd(["echo", "hello"])
    assert result.ok and result.stdout == "hello\n"


def test_failure_names_command_and_stderr() -> None:
    with pytest.raises(CmdError) as exc:
        cmd(["ls", "/nonexistent-netregress"])
    assert "ls /nonexistent-netregress" in str(exc.value)
    assert "No such file" in str(exc.value)
    assert exc.value.returncode != 0


def test_unchecked_failure_returns_result() -> None:
    assert cmd(["false"], check=False).returncode == 1


def test_missing_tool_says_how_to_fix() -> None:
    with pytest.raises(MissingTool, match="scripts/setup"):
        cmd(["netregress-no-such-tool"])
