# SPDX-License-Identifier: GPL-2.0-only
"""The docs name only commands and files that exist.

Why a test: README.md and docs/*.md are how users meet netregress, and they drifted silently
while the code moved on (a patch renamed, a script line moved, a command that no longer
exists). Every ``scripts/NAME`` a code block tells a user to run must be an executable script,
and every ``kernels/…``, ``tests/…``, ``docs/…`` or ``scripts/…`` path written in backticks
must exist (a glob such as ``tcp-*.pkt`` must match something). Placeholders in capitals
(``DIR``, ``FILE``, ``NAME``), ``<…>`` and ``…`` stand for the reader's own values, and paths
under ``~/.cache`` are what a run creates: neither is checked.
"""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^\s*```")
_INDENTED = re.compile(r"^ {4,}(?![-*] |\d+\. )\S")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_COMMAND = re.compile(r"(?<![\w./~-])scripts/[\w.-]+")
_PATH = re.compile(r"(?<![\w./~-])(?:kernels|tests|docs|scripts)/[^\s`'\"(),;]*")
_PLACEHOLDER = re.compile(r"(?:^|/)[A-Z][A-Z0-9_]*(?:$|/)|<|…|\.\.\.")


def _code_lines(text: str) -> list[str]:
    """The lines of fenced and indented code blocks (indented: four spaces or more, unless
    the line is a nested list item)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif fenced or _INDENTED.match(line):
            lines.append(line)
    return lines


def _prose(text: str) -> str:
    """The text outside fenced blocks, where inline code spans live."""
    kept, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            kept.append(line)
    return "\n".join(kept)


def commands() -> list[tuple[str, str]]:
    """(document, ``scripts/NAME``) for every script a code block runs."""
    return sorted(
        {
            (doc.name, found)
            for doc in DOCS
            for line in _code_lines(doc.read_text())
            for found in _COMMAND.findall(line.split(" #", 1)[0])
        }
    )


def paths() -> list[tuple[str, str]]:
    """(document, path) for every repository path written in an inline code span, a pytest
    node id cut to its file, placeholders and what runs create left out."""
    found = set()
    for doc in DOCS:
        for _, span in _SPAN.findall(_prose(doc.read_text())):
            for path in _PATH.findall(" ".join(span.split())):
                path = path.split("::", 1)[0].rstrip(".:")
                if not _PLACEHOLDER.search(path):
                    found.add((doc.name, path))
    return sorted(found)


@pytest.mark.parametrize("doc, command", commands())
def test_a_script_the_docs_run_is_an_executable(doc: str, command: str) -> None:
    script = ROOT / command
    assert script.is_file() and os.access(script, os.X_OK), f"{doc} runs {command}: no such script"


@pytest.mark.parametrize("doc, path", paths())
def test_a_path_the_docs_name_exists(doc: str, path: str) -> None:
    assert any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists(), (
        f"{doc} names `{path}`, which is not in the repository"
    )


def test_the_docs_are_searched() -> None:
    """The extraction finds what the README certainly shows, so an empty parametrization
    never passes silently."""
    assert ("README.md", "scripts/netregress") in commands()
    assert ("README.md", "kernels/expectations.toml") in paths()
    assert ("README.md", "tests/cases/packetdrill/tcp-*.pkt") in paths()
