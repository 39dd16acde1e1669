# SPDX-License-Identifier: GPL-2.0-only
"""Every source file says its licence: GPL-2.0-only (LICENSE, pyproject.toml's `license`).

Why a test: the licence line is what tools (the kernel's checkpatch, REUSE, scancode) read, and
a case moved upstream into tools/testing/selftests needs it; a new file that forgets it fails
here, not in a review. Checked: every tracked `.py` and `.sh` file and everything under
`scripts/`, the line first or right after a shebang.

Not the `.pkt` scripts: a line added at their top would move every line number their
`expect-fail` patterns name (`file:line: ...`) and the recorded conformance reference
(tests/packetdrill/conformance-reference.json) keeps, so they carry none.
"""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPDX = "# SPDX-License-Identifier: GPL-2.0-only"


def carries_the_licence(text: str) -> bool:
    """The SPDX line is the first line, or the second after a shebang."""
    lines = text.splitlines()[:2]
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    return lines[:1] == [SPDX]


def _tracked() -> list[str]:
    proc = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.py", "*.sh", "scripts/"],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"not a git checkout, no list of tracked files: {proc.stderr.strip()}")
    return sorted(set(proc.stdout.split()))


def test_every_source_file_and_script_carries_the_spdx_line() -> None:
    files = _tracked()
    assert any(name.startswith("scripts/") for name in files) and len(files) > 100
    missing = [name for name in files if not carries_the_licence((ROOT / name).read_text())]
    assert not missing, f"first line (after a shebang) must be '{SPDX}': {missing}"


@pytest.mark.parametrize(
    ("text", "carries"),
    [
        (f'{SPDX}\n"""Docstring."""\n', True),
        (f"#!/usr/bin/env bash\n{SPDX}\nset -e\n", True),
        (f"{SPDX}\n", True),
        ('"""Docstring."""\n', False),
        (f'"""Docstring."""\n{SPDX}\n', False),  # anywhere else is not where tools look
        (f"#!/bin/sh\n# comment\n{SPDX}\n", False),
        ("# SPDX-License-Identifier: GPL-2.0\n", False),  # the deprecated spelling: one here
        ("", False),
    ],
)
def test_the_check_finds_a_missing_or_misplaced_line(text: str, carries: bool) -> None:
    assert carries_the_licence(text) is carries
