# SPDX-License-Identifier: GPL-2.0-only
"""A mutant: one patch that breaks one kernel behaviour, read from a file.

Why a plain patch with a prose head instead of a manifest: a mutant must be reviewable as the
change it makes, and ``patch`` ignores the prose before the first ``--- a/`` line, so the file
applies as it is with the build machinery's own patch handling. The first line says, in one
sentence, which behaviour it breaks; ``Key: value`` lines after it (``Subsystem``,
``Regression shape``) sort it in the report. A real fix given with ``--revert`` is a mutant
too: its reverse puts the bug back ("does my new test fail without my fix?"). A mutant mined
from two Debian packages (`scripts/mutants mine`) also says which upstream change it reverts
(`Upstream:`) and between which versions it was found (`Range: OLD..NEW`); it is read only
once a person has named that change and written line 1.
"""

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from kernels.acquire.from_source.patches import Patch
from kernels.errors import KernelsError

_HEADER = re.compile(r"^([A-Z][A-Za-z -]*):\s*(.+)$")
_UNCONFIRMED = re.compile(r"^(?:TO CONFIRM:|Upstream:\s*$)", re.MULTILINE)
_SUBJECT = re.compile(r"^Subject:\s*(?:\[[^]]*\]\s*)?(.+)$", re.MULTILINE)
UNSORTED = "unsorted"


@dataclass(frozen=True)
class Mutant:
    """`behaviour` is the sentence users read in the report; `patch` is what the build applies."""

    name: str
    behaviour: str
    subsystem: str
    shape: str
    patch: Patch
    survivor: str = ""  # `Survivor:` head line: "equivalent: why" or "not observable: why"
    upstream: str = ""  # `Upstream:` head line of a mined mutant: the change it reverts
    range: str = ""  # `Range:` head line of a mined mutant: OLD..NEW

    @property
    def diff(self) -> str:
        """The unified diff alone (from the first file header), as the report shows it."""
        start = self.patch.text.find("--- a/")
        return self.patch.text[start:] if start >= 0 else self.patch.text


def _headers(lines: list[str]) -> dict[str, str]:
    """`Key: value` lines of the prose head, up to the first blank line or diff line."""
    found: dict[str, str] = {}
    for line in lines:
        if not line.strip() or line.startswith(("--- ", "diff ", "Index: ")):
            break
        if match := _HEADER.match(line):
            found[match.group(1).lower()] = match.group(2).strip()
    return found


def read_mutant(path: Path) -> Mutant:
    """A curated mutant file: line 1 the behaviour it breaks, then `Key: value` headers."""
    patch = Patch.read(path)
    lines = patch.text.splitlines()
    first = lines[0].strip() if lines else ""
    if not first or first.startswith(("--- ", "diff ", "+++ ")):
        raise KernelsError(
            f"{path}: a mutant's first line says, in one sentence, which behaviour it breaks "
            f"(found {first[:60]!r}); the diff follows the prose"
        )
    headers = _headers(lines[1:])
    head = "\n".join(lines[: lines.index("")] if "" in lines else lines)
    if "range" in headers and _UNCONFIRMED.search(head):
        raise KernelsError(
            f"{path}: a mined candidate not yet confirmed: write line 1 (the behaviour it "
            "breaks) and the Upstream: line (the change it reverts, one of the titles "
            "proposed below it)"
        )
    return Mutant(
        name=path.stem,
        behaviour=first,
        subsystem=headers.get("subsystem", UNSORTED),
        shape=headers.get("regression shape", ""),
        patch=patch,
        survivor=headers.get("survivor", ""),
        upstream=headers.get("upstream", ""),
        range=headers.get("range", ""),
    )


def read_revert(path: Path) -> Mutant:
    """A real fix (e.g. `git format-patch` output), applied in reverse: the bug it fixed."""
    patch = Patch.read(path)
    subject = _SUBJECT.search(patch.text)
    what = subject.group(1).strip() if subject else path.stem
    return Mutant(
        name=f"revert-{path.stem}",
        behaviour=f"Reverts the fix “{what}”.",
        subsystem=_headers(patch.text.splitlines()).get("subsystem", "revert"),
        shape="fix reverted",
        patch=Patch(name=f"revert-{patch.name}", text=patch.text, reverse=True),
    )


def read_set(paths: list[Path]) -> list[Mutant]:
    """Every `*.patch` of the named files and folders (folders sorted by name), once each."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.glob("*.patch")))
        elif path.is_file():
            files.append(path)
        else:
            raise KernelsError(f"no mutant file or folder {path}")
    mutants = [read_mutant(path) for path in dict.fromkeys(files)]
    names = [m.name for m in mutants]
    if twice := sorted({name for name in names if names.count(name) > 1}):
        raise KernelsError(f"two mutants share a name: {', '.join(twice)} (rename one file)")
    return mutants


def result_key(source: str, patch: Patch | None, selection: list[str]) -> str:
    """What a stored result is valid for: the source, the exact patch and direction, and the
    test selection. Anything else changed (a mutant edited, a test added to the selection by
    name) makes a new key, so a resumed campaign never reuses a stale answer."""
    digest = hashlib.sha256()
    for part in (source, patch.text if patch else "", str(patch.reverse) if patch else ""):
        digest.update(part.encode() + b"\0")
    for arg in selection:
        digest.update(arg.encode() + b"\0")
    return digest.hexdigest()[:16]
