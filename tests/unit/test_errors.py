# SPDX-License-Identifier: GPL-2.0-only
"""One error root: whatever part of netregress raised it, an entry point prints one line."""

import pytest

from conformance.errors import UsageProblem
from kernels.errors import KernelsError
from netregress.errors import MissingTool, NetregressError, run_cli
from packetdrill.errors import ScriptError


@pytest.mark.parametrize(
    "error",
    [
        KernelsError("unknown kernel 'x'"),
        ScriptError("t.pkt:3: syntax error"),
        MissingTool("'tcpdump' is not installed"),
        UsageProblem("--jobs must be positive"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_part_raises_under_the_one_root(error: Exception, capsys) -> None:
    assert isinstance(error, NetregressError)

    def body() -> int:
        raise error

    assert run_cli("prog", body) == 2
    assert capsys.readouterr().err == f"prog: {error}\n"


def test_ctrl_c_is_a_line_and_130(capsys) -> None:
    def body() -> int:
        raise KeyboardInterrupt

    assert run_cli("matrix", body, interrupted="interrupted; every VM was stopped") == 130
    assert capsys.readouterr().err == "matrix: interrupted; every VM was stopped\n"


def test_a_bug_is_not_hidden() -> None:
    """Only errors a user can cause are turned into a message: our own bugs keep their
    traceback."""

    def body() -> int:
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        run_cli("prog", body)
