"""`pytest --ktap-file`: a real host run's KTAP, read back by tap.py (a TAP parser we did not
write) and by the KTAP rules restated from the kernel's ktap.rst (version line first, then the
plan, results numbered from 1, directives after '#')."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from tap.parser import Parser

from kernels.matrix.results import TestResult
from kernels.report.ktap import render

DEMO = """
import pytest


def test_passes():
    pass


def test_fails():
    assert 2 + 2 == 5, "arithmetic is broken"


def test_skips():
    pytest.skip("no geneve module")


@pytest.mark.xfail(reason="known kernel bug", strict=True)
def test_xfails():
    assert False


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    pass
"""
_RESULT = re.compile(r"^(not ok|ok) (\d+)(?: ([^#]*?))?(?: # (\S+)(?: (.*))?)?$")


def _host_run(tmp_path: Path, *extra: str) -> str:
    (tmp_path / "test_demo.py").write_text(DEMO)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ktap-file", "out.tap",
         "test_demo.py", *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr  # test_fails
    return (tmp_path / "out.tap").read_text()


@pytest.mark.parametrize("extra", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_host_run_parses_with_tap_py(tmp_path: Path, extra: list[str], opted_in: None) -> None:
    text = _host_run(tmp_path, *extra)
    lines = list(Parser().parse_text(text))
    results = [line for line in lines if line.category == "test"]
    assert [line.expected_tests for line in lines if line.category == "plan"] == [6]
    assert sorted(r.number for r in results) == list(range(1, 7))
    assert sum(r.ok for r in results) == 5 and sum(r.skip for r in results) == 1
    by_name = {r.description.rpartition("::")[2]: r for r in results}
    assert not by_name["test_fails"].ok
    assert by_name["test_skips"].directive.reason == "no geneve module"
    assert by_name["test_xfails"].directive.text == "XFAIL known kernel bug"
    _follows_the_ktap_rules(text.splitlines())


def _follows_the_ktap_rules(lines: list[str]) -> None:
    assert lines[:2] == ["KTAP version 1", "1..6"]
    results = [m for line in lines if (m := _RESULT.match(line))]
    assert [int(m.group(2)) for m in results] == list(range(1, 7))
    assert all(line.startswith("#") for line in lines[2:] if not _RESULT.match(line))
    directives = {m.group(3).rpartition("::")[2]: (m.group(1), m.group(4)) for m in results}
    assert directives["test_skips"] == ("ok", "SKIP")
    assert directives["test_xfails"] == ("ok", "XFAIL")
    assert directives["test_fails"] == ("not ok", None)
    failed = lines.index(next(line for line in lines if line.endswith("::test_fails")))
    before = lines[failed - 6 : failed]  # its diagnostics come right before its result line
    assert "# E       AssertionError: arithmetic is broken" in before
    assert lines[-1] == "# Totals: pass:3 fail:1 xfail:1 xpass:0 skip:1 error:0"


def test_crashes_and_awkward_names() -> None:
    text = render(
        [TestResult("t.py::test_a[x#1]", "crash", "Kernel panic - not syncing:\nsysrq"),
         TestResult("t.py::test_b", "skip", "")],
        "title",
    )  # fmt: skip
    assert "not ok 1 t.py::test_a[x%231] # ERROR Kernel panic - not syncing: sysrq\n" in text
    assert "ok 2 t.py::test_b # SKIP\n" in text
    results = [line for line in Parser().parse_text(text) if line.category == "test"]
    assert [r.ok for r in results] == [False, True] and results[1].skip
