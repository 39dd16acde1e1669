"""kernels/matrix/schedule.py: the matrix starts the slowest kernels first, by the last run's
time."""

from pathlib import Path

import pytest

from kernels.matrix.schedule import remember, slowest_first
from kernels.matrix.shard import Piece


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def test_longest_first_and_never_timed_before_all() -> None:
    pieces = [Piece("running"), Piece("fast"), Piece("slow"), Piece("new")]
    remember({"running": 60.0, "fast": 100.0})
    remember({"slow": 200.0})  # merged with what was kept
    assert [p.kernel for p in slowest_first(pieces)] == ["new", "slow", "fast", "running"]


def test_without_a_record_the_plan_order_stays(tmp_path: Path) -> None:
    pieces = [Piece("b"), Piece("a")]
    assert slowest_first(pieces) == pieces
    (tmp_path / "netregress" / "kernels").mkdir(parents=True, exist_ok=True)
    (tmp_path / "netregress" / "kernels" / "durations.json").write_text("not json")
    assert slowest_first(pieces) == pieces
