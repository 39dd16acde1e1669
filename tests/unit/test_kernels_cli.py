# SPDX-License-Identifier: GPL-2.0-only
"""Command lines of `scripts/matrix` and `pytest --kernel`: bad input is one clear line."""

import subprocess
import sys
from pathlib import Path

import pytest

from kernels.cli.matrix import _parser, main
from kernels.paths import REPO_ROOT


def test_unknown_options_and_selection_go_to_pytest() -> None:
    args, rest = _parser().parse_known_args(
        ["--kernels", "a,b", "tests/cases", "-k", "ipip or tunl0", "--time=3", "-x"]
    )
    assert args.kernels == ["a,b"]
    assert rest == ["tests/cases", "-k", "ipip or tunl0", "--time=3", "-x"]


def test_list_shows_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "bookworm-6.1" in out and "suite=bookworm" in out


@pytest.mark.parametrize("argv, message", [
    (["--kernels", "nope"], "unknown kernel 'nope'"),
    (["--kernels", "running,running"], "named twice"),
    (["--kernels", "/nonexistent/bzImage"], "does not exist"),
], ids=["unknown", "twice", "missing-image"])  # fmt: skip
def test_bad_input_is_a_clear_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_expectations_file_fails_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "exp.toml"
    bad.write_text("[[expect]]\ntest = 'x'\n")
    assert main(["--kernels", "running", "--expectations", str(bad)]) == 2
    assert "needs 'test' (a node id pattern) and 'reason'" in capsys.readouterr().err


def test_pytest_kernel_with_a_bogus_image_is_a_usage_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bzImage"
    bogus.write_bytes(b"MZ" + bytes(4096))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--kernel", str(bogus), "tests/unit/test_kernels_guest.py",
         "-p", "no:cacheprovider"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 4
    assert "is not an x86 bzImage" in proc.stderr and "Traceback" not in proc.stderr
