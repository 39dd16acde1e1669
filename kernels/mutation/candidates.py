# SPDX-License-Identifier: GPL-2.0-only
"""A mined candidate revert as a file a person completes: a mutant's head (the lines
kernels/mutation/mutant.py reads) over the hunks of one function, reversed.

Why unfinished on purpose: which upstream fix a hunk belongs to, and what a test would see
with it reverted, is judgement. The miner proposes the changelog titles of the candidate's
subsystem that look likeliest (its function's or file's name in the title first) as comment
lines; `scripts/mutants` refuses the file until its `Upstream:` line names one
(kernels/mutation/mutant.py), then runs it like any curated mutant.
"""

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from kernels.mutation.changelog import Entry
from kernels.mutation.hunks import FILE_SCOPE, WHOLE_FILE, Group, patch_text

SHOWN = 6  # candidate titles listed per file
SHAPE = "upstream change reverted"
_WORD = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Range:
    """Which two versions of which package a candidate is mined from."""

    package: str
    old: str
    new: str

    @property
    def text(self) -> str:
        return f"{self.old}..{self.new}"


def _score(group: Group, title: str) -> int:
    """How strongly a title points at this group: the function's name in it (4), the file's
    (2), each longer word of the function's name (1)."""
    words = {word.lower() for word in _WORD.findall(title)}
    function = group.function.removesuffix("()")
    score = 4 * (function.lower() in words) + 2 * (PurePosixPath(group.path).stem in words)
    parts = {part for part in function.lower().split("_") if len(part) > 3}
    return score + len(parts & words)


def likeliest(group: Group, entries: list[Entry]) -> list[Entry]:
    """The subsystem's titles, likeliest first (the changelog's order among equals)."""
    own = [entry for entry in entries if entry.subsystem == group.subsystem]
    ranked = sorted(enumerate(own), key=lambda item: (-_score(group, item[1].title), item[0]))
    return [entry for _, entry in ranked]


def file_name(group: Group, number: int) -> str:
    """`tcp-03-tcp_rcv_established.patch`: the subsystem sorts the set, the function says
    what it touches."""
    what = group.function
    if what in (WHOLE_FILE, FILE_SCOPE) or not what.endswith("()"):
        what = PurePosixPath(group.path).name
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", what.removesuffix("()")).strip("-.")[:60]
    return f"{group.subsystem}-{number:02d}-{slug or 'hunks'}.patch"


def render(group: Group, mined: Range, entries: list[Entry]) -> str:
    """The candidate file: head (line 1 to complete, `Key: value` lines, the proposals as
    comments), prose, then the reversed hunks."""
    where = f"{group.function} in {group.path}"
    proposals = likeliest(group, entries)
    listed = [f"#   {entry.title} ({entry.release})" for entry in proposals[:SHOWN]]
    if len(proposals) > SHOWN:
        listed.append(f"#   … {len(proposals) - SHOWN} more {group.subsystem} titles in the "
                      "range (scripts/mutants mine prints them all)")  # fmt: skip
    if not listed:
        listed = [f"#   (none: the changelog names no {group.subsystem} change in the range)"]
    head = [
        f"TO CONFIRM: which behaviour comes back when {where} is as in {mined.old}? "
        "(replace this line with that sentence)",
        f"Subsystem: {group.subsystem}",
        f"Regression shape: {SHAPE}",
        f"Range: {mined.text}",
        "Upstream:",
        f"# Candidates for Upstream: (the {group.subsystem} titles of the changelog, "
        "likeliest first; copy one to the line above):",
        *listed,
        "Observable:",
        "# Observable: what a test would see with this reverted (or write Survivor: below).",
        "Survivor:",
        "",
        f"Mined by `scripts/mutants mine {mined.package} {mined.old} {mined.new}`:",
        f"{len(group.hunks)} hunk(s) of {where}, reversed.",
        f"Applied with `patch -p1` to the {mined.new} tree, they make this code",
        f"as it was in {mined.old}. Once confirmed, it runs as a mutant of that tree:",
        f"scripts/mutants --debian {mined.package} FILE ({mined.new} installed).",
        "",
    ]
    return "\n".join(head) + "\n" + patch_text(group.file)
