# SPDX-License-Identifier: GPL-2.0-only
"""kernels/matrix/schedule.py: the guests with the shortest start-up take the first slots,
the rest follow longest tests first; timings come from the guests' own phase logs."""

from pathlib import Path

import pytest

from kernels.matrix.schedule import Timing, measured, remember, start_order
from kernels.matrix.shard import Piece
from kernels.vm import phases


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def _order(names: list[str], jobs: int) -> list[str]:
    return [piece.kernel for piece in start_order([Piece(name) for name in names], jobs)]


def test_short_startups_take_the_slots_then_longest_tests_first() -> None:
    """The session-6 matrix: bullseye and bookworm start fastest, sid has the longest tests."""
    remember({"sid": Timing(23.0, 107.0), "trixie": Timing(21.5, 101.0)})
    remember({"bullseye": Timing(16.0, 96.0), "bookworm": Timing(17.0, 101.5)})
    assert _order(["bullseye", "bookworm", "trixie", "sid"], 2) == [
        "bullseye", "bookworm", "sid", "trixie"
    ]  # fmt: skip
    assert _order(["bullseye", "bookworm", "trixie", "sid"], 1) == [
        "bullseye", "sid", "bookworm", "trixie"
    ]  # fmt: skip


def test_never_timed_kernels_start_first_and_take_slots() -> None:
    remember({"fast": Timing(10.0, 50.0), "slow": Timing(20.0, 200.0)})
    assert _order(["fast", "slow", "new"], 2) == ["new", "fast", "slow"]
    assert _order(["slow", "new2", "fast", "new"], 2) == ["new2", "new", "slow", "fast"]


def test_a_startup_measured_ahead_keeps_the_last_full_speed_one() -> None:
    remember({"k": Timing(16.0, 90.0), "other": Timing(18.0, 90.0)})
    remember({"k": Timing(None, 95.0)})  # booted ahead: its start-up ran at idle priority
    assert _order(["other", "k"], 1) == ["k", "other"]
    remember({"never": Timing(None, 300.0)})  # never at full speed: its start-up is unknown
    assert _order(["never", "other", "k"], 2) == ["k", "other", "never"]


def test_without_a_record_the_plan_order_stays(tmp_path: Path) -> None:
    pieces = [Piece("b"), Piece("a")]
    assert start_order(pieces, 2) == pieces
    (tmp_path / "netregress" / "kernels").mkdir(parents=True, exist_ok=True)
    (tmp_path / "netregress" / "kernels" / "durations.json").write_text("not json")
    assert start_order(pieces, 2) == pieces
    (tmp_path / "netregress" / "kernels" / "durations.json").write_text('{"a": 12.5}')
    assert start_order(pieces, 2) == pieces  # an older checkout's figure: counts as new


def _log(tmp_path: Path, stamps: dict[str, float]) -> phases.Log:
    path = tmp_path / phases.FILE
    path.write_text("".join(f'{{"phase": "{name}", "t": {t}}}\n' for name, t in stamps.items()))
    return phases.read(path)


def test_timing_from_a_guests_phase_log(tmp_path: Path) -> None:
    full = _log(tmp_path, {"kernel-booted": 1.5, "collected": 16.0, "exited": 112.0})
    assert measured(full) == Timing(16.0, 96.0)
    ahead = _log(tmp_path, {"collected": 76.0, "gate-opened": 93.2, "exited": 189.1})
    assert measured(ahead) == Timing(None, pytest.approx(95.9))
    assert measured(_log(tmp_path, {"collected": 16.0})) is None  # crashed mid-run
