# SPDX-License-Identifier: GPL-2.0-only
"""`pytest --ktap-file`: a real host run's KTAP, read back by tap.py (a TAP parser we did not
write) and by the KTAP rules restated from the kernel's ktap.rst (version line first, then the
plan, results numbered from 1, directives after '#')."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from tap.parser import Parser

from kernels.matrix.results import SUBTESTS_PROPERTY, Outcome, TestResult
from kernels.report.ktap import MACHINE_SLOW, render
from packetdrill.timing import TIMING_PROPERTY, TimingRecord
from packetdrill.tolerance import Tolerance

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
        ["title"],
    )  # fmt: skip
    assert "not ok 1 t.py::test_a[x%231] # ERROR Kernel panic - not syncing: sysrq\n" in text
    assert "ok 2 t.py::test_b # SKIP\n" in text
    results = [line for line in Parser().parse_text(text) if line.category == "test"]
    assert [r.ok for r in results] == [False, True] and results[1].skip


def test_a_selftests_sub_tests_are_nested_results() -> None:
    """A kernel selftest item's sub-tests (its ksft_subtests property) are a nested KTAP
    document before its own line: a failing check of fib_tests.sh is a `not ok` a KTAP reader
    sees, not hidden behind the script's line."""
    subtests = "pass\tIPv4 route add\nfail\tIPv6 route #2\nskip\tvrf\nxfail\told\n"
    item = TestResult("a.selftests::fib_tests.sh", "fail", "1 of 4 sub-tests failed",
                      properties=((SUBTESTS_PROPERTY, subtests),))  # fmt: skip
    text = render([item, TestResult("t.py::test_b", "pass")], "title")
    assert "\n".join([
        "    KTAP version 1", "    1..4", "    ok 1 IPv4 route add", "    not ok 2 IPv6 route %232",
        "    ok 3 vrf # SKIP", "    ok 4 old # XFAIL", "# 1 of 4 sub-tests failed",
        "not ok 1 a.selftests::fib_tests.sh", "ok 2 t.py::test_b",
    ]) in text  # fmt: skip
    nested = Parser().parse_text(text)
    assert [line.ok for line in nested if line.category == "test"] == [False, True]


def _pkt(name: str, outcome: Outcome, verdict: str, timing_error: str = "") -> TestResult:
    """A .pkt item's cell, with the timing record its report carries."""
    record = TimingRecord(verdict, 0, Tolerance(), timing_error=timing_error)
    details = f"{name}:4: error handling packet: ..." if outcome == "fail" else ""
    return TestResult(f"{name}::ipv4", outcome, "why", details,
                      properties=((TIMING_PROPERTY, record.to_json()),))  # fmt: skip


SLOW_MIX = [
    _pkt("late.pkt", "fail", "failed", "late"),  # stopped on a timing check: timing alone
    _pkt("early.pkt", "fail", "failed", "early"),
    _pkt("tos.pkt", "fail", "failed"),  # a wrong field: a real failure on any machine
    _pkt("ok.pkt", "pass", "clean"),
    _pkt("stalled.pkt", "xfail", "not-checkable", "late"),  # already an xfail
    TestResult("t.py::test_fails", "fail", "assert 1 == 2", "E   assert 1 == 2"),
]


def test_on_a_slow_machine_a_timing_mismatch_is_an_xfail_never_a_pass() -> None:
    """KSFT_MACHINE_SLOW: a failure on timing alone is not checkable there (XFAIL, the
    mismatch kept as diagnostics); every other result is written as without it."""
    normal, slow = render(SLOW_MIX, ["t"]), render(SLOW_MIX, ["t"], slow=True)
    xfail = f"# XFAIL timing not checkable ({MACHINE_SLOW})"
    assert f"ok 1 late.pkt::ipv4 {xfail}\n" in slow and "not ok 1 late.pkt::ipv4\n" in normal
    assert f"ok 2 early.pkt::ipv4 {xfail}\n" in slow
    assert "# late.pkt:4: error handling packet: ...\nok 1" in slow  # shown, not hidden
    for line in ("not ok 3 tos.pkt::ipv4", "ok 4 ok.pkt::ipv4", "not ok 6 t.py::test_fails",
                 "ok 5 stalled.pkt::ipv4 # XFAIL why"):  # fmt: skip
        assert f"{line}\n" in slow and f"{line}\n" in normal
    assert slow.splitlines()[-1] == "# Totals: pass:1 fail:2 xfail:3 xpass:0 skip:0 error:0"
    results = [line for line in Parser().parse_text(slow) if line.category == "test"]
    assert [r.ok for r in results] == [True, True, False, True, True, False]
    assert [r.todo or r.skip for r in results] == [False] * 6  # an XFAIL, not a skip


# A datagram the kernel sends at once, due 500 ms later: early beyond any tolerance, the run
# stops on that timing check. The same script with a wrong write size fails on no timing.
PKT = """\
    0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3
   +0 connect(3, ..., ...) = 0
   +0 write(3, ..., 10) = 10
  +.5 > udp (10)
"""


@pytest.mark.parametrize("slow", ["", "1"], ids=["unset", "set"])
def test_ksft_machine_slow_on_a_real_run(
    tmp_path: Path, slow: str, opted_in: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timing record of a real failed script reaches the KTAP writer; pytest's own verdict
    (the exit status) is unchanged either way."""
    (tmp_path / "early-v4.pkt").write_text(PKT)
    (tmp_path / "size-v4.pkt").write_text(PKT.replace("= 10\n", "= 20\n", 1))
    monkeypatch.setenv(MACHINE_SLOW, slow)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ktap-file", "out.tap",
         "--pkt-ip-version=ipv4", "--tolerance-scale=1", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = (tmp_path / "out.tap").read_text().splitlines()
    early = next(line for line in lines if "early-v4.pkt::ipv4" in line)
    size = next(line for line in lines if "size-v4.pkt::ipv4" in line)
    if slow:
        assert re.fullmatch(r"ok \d early-v4.pkt::ipv4 # XFAIL timing not checkable "
                            r"\(KSFT_MACHINE_SLOW\)", early)  # fmt: skip
        assert any("timing error" in line for line in lines[: lines.index(early)])
    else:
        assert re.fullmatch(r"not ok \d early-v4.pkt::ipv4", early)
    assert re.fullmatch(r"not ok \d size-v4.pkt::ipv4", size)
