# SPDX-License-Identifier: GPL-2.0-only
"""netns.variants as a plugin: an expected failure is formatted in one line, any other in full."""

import pytest

CASES = """
import pytest
from netns.variants import broken

@pytest.mark.parametrize("x", [pytest.param(0, id="good"), broken(1, id="bad", why="x is 1")])
def test_oracle(x):
    assert x == 0

@pytest.mark.parametrize("x", [broken(1, id="bad", why="x is 1")])
def test_dies_otherwise(x):
    raise RuntimeError("set-up went wrong")
"""


def _call_failures(pytester: pytest.Pytester, *args: str) -> dict[str, str]:
    """Test name → the traceback text of its failed or xfailed call."""
    pytester.makepyfile(test_cases=CASES)
    reports = pytester.inline_run("-p", "no:cacheprovider", *args).getreports(
        "pytest_runtest_logreport"
    )
    return {
        report.nodeid.split("::")[1]: report.longreprtext
        for report in reports
        if report.when == "call" and not report.passed
    }


def test_only_the_expected_failure_is_cut_short(pytester: pytest.Pytester) -> None:
    failures = _call_failures(pytester)
    expected = failures["test_oracle[broken-bad]"]
    assert "assert 1 == 0" in expected and len(expected.splitlines()) == 1, expected
    # A broken variant that dies of something else is a real failure: shown in full.
    assert "def test_dies_otherwise" in failures["test_dies_otherwise[broken-bad]"]


def test_runxfail_shows_the_full_failure(pytester: pytest.Pytester) -> None:
    failures = _call_failures(pytester, "--runxfail")
    assert "def test_oracle" in failures["test_oracle[broken-bad]"]
