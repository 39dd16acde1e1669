# SPDX-License-Identifier: GPL-2.0-only
"""kernels/vm/phases.py and the bench's table: the stamps a pytest run writes, read back."""

import subprocess
from pathlib import Path

import pytest

from kernels.cli.bench import phase_rows
from kernels.vm import phases

ORDER = [
    "python-start",
    "pytest-core",
    "plugins-imported",
    "configured",
    "collected",
    "tests-done",
    "finished",
]


def test_a_run_stamps_its_phases_in_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_path = pytester.path / phases.FILE
    monkeypatch.setenv(phases.ENV, str(log_path))
    pytester.makepyfile("import time\ndef test_slow(): time.sleep(0.2)\ndef test_fast(): pass\n")
    result = pytester.runpytest_subprocess("-p", "kernels.vm.phases", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    log = phases.read(log_path)
    assert list(log.stamps) == ORDER
    times = [log.stamps[name] for name in ORDER]
    assert times == sorted(times)
    assert log.sums["call"] >= 0.2  # pytest's own duration of test_slow is in the sum
    assert log.slowest[0][1].endswith("test_slow")
    rows = dict(phase_rows(log, None, 0.0))
    assert rows["collection (test module imports)"] is not None
    assert rows["between tests (reports, result log)"] is not None
    assert rows["kernel boot → init"] is None  # no guest init stamped this run


def test_without_the_variable_nothing_is_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(phases.ENV, raising=False)
    pytester.makepyfile("def test_one(): pass\n")
    pytester.runpytest_subprocess("-p", "kernels.vm.phases").assert_outcomes(passed=1)
    assert not (pytester.path / phases.FILE).exists()


def test_a_line_cut_by_a_crash_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / phases.FILE
    path.write_text('{"phase":"userspace","t":3.5}\n{"phase":"python-st')
    assert phases.read(path).stamps == {"userspace": 3.5}
    assert phases.read(tmp_path / "missing").stamps == {}


def test_shell_stamp_writes_a_line_read_can_parse(tmp_path: Path) -> None:
    path = tmp_path / phases.FILE
    subprocess.run(["sh", "-c", phases.shell_stamp("userspace", str(path))], check=True)
    subprocess.run(["sh", "-c", phases.shell_stamp("init", str(path), "1.25")], check=True)
    stamps = phases.read(path).stamps
    assert stamps["init"] == 1.25 and stamps["userspace"] > 0


def test_a_guest_booted_ahead_shows_its_wait_and_what_came_after_its_turn() -> None:
    log = phases.Log(
        stamps={"configured": 1.0, "collected": 2.0, "gate-opened": 30.0, "tests-done": 40.0,
                "finished": 40.5, "exited": 41.0},
        sums={"setup": 1.0, "call": 7.0, "teardown": 1.0},
    )  # fmt: skip
    rows = dict(phase_rows(log, None, 0.0))
    assert rows["booted ahead: waiting for a free slot"] == 28.0
    assert rows["between tests (reports, result log)"] == 1.0  # from the turn, not collection
    assert rows["booted ahead: from its turn to its exit"] == 11.0
