# SPDX-License-Identifier: GPL-2.0-only
"""scripts/soak: verdict counts over repeated runs, and a flaky test flagged for real."""

import json
from pathlib import Path

import pytest

from kernels.cli import soak
from kernels.cli.soak import Run, Soak, main, render
from netns import rootless

FLIPPING = """
from pathlib import Path

STATE = Path(__file__).with_name("runs")


def test_stable():
    assert True


def test_flips():
    runs = int(STATE.read_text()) if STATE.exists() else 0
    STATE.write_text(str(runs + 1))
    assert runs % 2 == 0
"""

IN_A_USER_NAMESPACE = """
from netns import privilege


def test_runs_in_a_user_namespace_of_its_own():
    assert not privilege.in_initial_user_namespace()
"""


def _run(number: int) -> Run:
    return Run(number, 0, 1.0, (0.5, 0.5, 0.5), (1.5, 1.0, 0.5))


def test_counts_flag_varied_and_failed_tests() -> None:
    soak = Soak(runs=[_run(1), _run(2)])
    for outcome in ("pass", "pass"):
        soak.add("t::stable", outcome)
    for outcome in ("pass", "fail"):
        soak.add("t::flaky", outcome)
    for outcome in ("fail", "fail"):
        soak.add("t::broken", outcome)
    soak.add("t::lost_once", "pass")
    assert soak.varied() == ["t::flaky", "t::lost_once"]
    assert soak.failed() == ["t::broken", "t::flaky"]
    table = render(soak).splitlines()
    assert table[1].startswith("t::flaky") and table[1].endswith("VARIED")
    assert "2 run(s), 4 test(s): 2 varied, 2 failed at least once" in table[-1]


def test_a_flaky_test_is_flagged_end_to_end(tmp_path: Path, opted_in: None) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_flip.py").write_text(FLIPPING)
    out = tmp_path / "out"
    status = main(
        [
            "--runs",
            "3",
            "--workers",
            "0",
            "--note",
            "unit test",
            "--output",
            str(out),
            str(suite / "test_flip.py"),
        ]
    )
    assert status == 1
    report = json.loads((out / "soak.json").read_text())
    flips = "test_flip.py::test_flips"
    assert report["varied"] == [k for k in report["tests"] if k.endswith(flips)]
    counts = next(c for k, c in report["tests"].items() if k.endswith(flips))
    assert counts == {"pass": 2, "fail": 1}
    assert report["note"] == "unit test" and len(report["runs"]) == 3
    assert "VARIED" in (out / "soak.txt").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--runs", "0"], "--runs must be at least 1"),
    (["--runs", "1", "--kernels", "sid"], "--kernels needs --matrix"),
], ids=["no-runs", "kernels-without-matrix"])  # fmt: skip
def test_bad_usage_is_a_clear_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(rootless.userns_problem() is not None, reason="no unprivileged user namespace")
def test_a_normal_users_runs_are_rootless(
    tmp_path: Path, opted_in: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each host run goes through netns.rootless, as a normal user's scripts/netregress does
    (root is taken for a normal user here: the run itself proves where it ran)."""
    monkeypatch.setattr(soak, "_rootless", lambda: True)
    (tmp_path / "test_where.py").write_text(IN_A_USER_NAMESPACE)
    out = tmp_path / "out"
    argv = ["--runs", "1", "--workers", "0", "--output", str(out), str(tmp_path / "test_where.py")]
    assert main(argv) == 0, (out / "run-001/pytest.log").read_text()
    assert json.loads((out / "soak.json").read_text())["tests"] != {}
