# SPDX-License-Identifier: GPL-2.0-only
"""kernels/vm/gate.py: a guest booted ahead of its turn collects, then holds its first test
until the host opens its gate; without the variable nothing waits."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernels.vm import gate, phases

TESTS = """\
from pathlib import Path

def test_marks_that_it_ran():
    Path("ran").touch()
"""


def _pytest(folder: Path, env: dict[str, str]) -> "subprocess.Popen[str]":
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "kernels.vm.phases", "-p", "kernels.vm.gate",
         "-p", "no:cacheprovider", "-q", "test_gated.py"],
        cwd=folder, env={**os.environ, **env}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def test_the_first_test_waits_for_the_gate_and_runs_once_it_opens(tmp_path: Path) -> None:
    (tmp_path / "test_gated.py").write_text(TESTS)
    gate_file, log = tmp_path / gate.FILE, tmp_path / phases.FILE
    proc = _pytest(tmp_path, {gate.ENV: str(gate_file), phases.ENV: str(log)})
    try:
        for _ in range(600):  # collected: now it waits at the gate
            if log.exists() and "collected" in phases.read(log).stamps:
                break
            time.sleep(0.05)
        time.sleep(0.5)  # a closed gate holds it however long
        assert not (tmp_path / "ran").exists()
        assert proc.poll() is None
        gate_file.touch()
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert (tmp_path / "ran").exists()
    stamps = phases.read(log).stamps
    assert stamps["collected"] < stamps["gate-opened"] < stamps["tests-done"]


def test_without_the_variable_nothing_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(gate.ENV, raising=False)
    (tmp_path / "test_gated.py").write_text(TESTS)
    out, _ = _pytest(tmp_path, {}).communicate(timeout=60)
    assert (tmp_path / "ran").exists(), out
