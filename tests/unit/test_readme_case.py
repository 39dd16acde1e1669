# SPDX-License-Identifier: GPL-2.0-only
"""The README's example case is one a newcomer can copy: it passes the project's oracle check
and runs green.

Why a test: the first example of "Adding a case" once had no broken variant, so the case a user
copied from it failed ``tests/unit/test_case_oracles.py`` on their first ``scripts/test``. Every
whole case module that section shows (a fenced Python block at the margin that starts with its
docstring; the indented snippets are fragments) is written into a temporary cases folder,
checked as ``tests/cases`` is, and run by pytest in namespaces of its own: its good
configuration must pass and its broken one be the strict xfail it claims to be.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from netns.variants import broken
from tests.unit.test_case_oracles import check_case_module

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


def readme_cases() -> list[str]:
    """The whole case modules of the README's "Adding a case" section."""
    section = README.read_text().split("\n## Adding a case\n", 1)[1].split("\n## ", 1)[0]
    return [block for block in _BLOCK.findall(section) if block.startswith('"""')]


def _write_cases(folder: Path, cases: list[str]) -> Path:
    folder.mkdir()
    for number, source in enumerate(cases):
        (folder / f"test_c99_readme_{number}.py").write_text(source)
    return folder


def test_the_readme_shows_a_whole_case() -> None:
    assert readme_cases(), "README's 'Adding a case' has no whole case module to copy"


def _without_broken_variants(source: str) -> str:
    return "".join(line for line in source.splitlines(True) if "broken(" not in line)


@pytest.mark.parametrize(
    "edit",
    [
        "as-shown",
        broken("no-broken-line", id="no-broken-variant",
               why="the example without its broken(...) line is the one that failed the check"),
    ],
)  # fmt: skip
def test_readme_cases_pass_the_oracle_check(tmp_path: Path, edit: str) -> None:
    cases = readme_cases()
    if edit == "no-broken-line":
        cases = [_without_broken_variants(source) for source in cases]
    for path in sorted(_write_cases(tmp_path / "cases", cases).iterdir()):
        check_case_module(path)


def test_readme_cases_run_green(tmp_path: Path) -> None:
    """Each example's good configuration passes and its broken one is an xfail, on this
    kernel, in namespaces the run makes (our plugins opted in as a user's project would)."""
    cases = readme_cases()
    folder = _write_cases(tmp_path / "cases", cases)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "netregress.plugins", "-p", "no:cacheprovider",
         "-q", f"--artifacts-dir={tmp_path / 'artifacts'}", str(folder)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    passed = sum(source.count("\ndef test_") for source in cases)
    assert f"{passed} passed, {passed} xfailed" in out, out
