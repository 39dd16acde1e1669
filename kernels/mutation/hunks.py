# SPDX-License-Identifier: GPL-2.0-only
"""The difference between two source trees as hunks that take the newer tree back to the
older, grouped by the C function each sits in.

Why diff NEW → OLD and not reverse OLD → NEW: a candidate revert must apply to the NEW tree,
and the hunk header's function context is taken from the side a hunk applies to, so the
diff is made in that direction. Why git's diff (`--no-index`, no repository needed): its
`cpp` function-name rule skips goto labels, which the kernel writes in column 0 and
`diff -p` takes for functions.
"""

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError
from kernels.mutation.areas import area_of_file

DEV_NULL = "/dev/null"
WHOLE_FILE = "(whole file)"
FILE_SCOPE = "(file scope)"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")
# A C function's (or prototype's) first line, in column 0.
_DEFINITION = re.compile(r"^[A-Za-z_][^;=]*\([^;]*;?$")
_ATTRIBUTES = "*.c diff=cpp\n*.h diff=cpp\n"


@dataclass(frozen=True)
class Hunk:
    """One hunk: its old-side (NEW tree) range, new-side (OLD tree) length, the function
    context git gave it and its body lines (` `, `-`, `+`, `\\`)."""

    start: int
    length: int
    result_length: int
    context: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class FileDiff:
    """One file's hunks; `source`/`target` are `a/PATH`, `b/PATH` or /dev/null (a file only
    in OLD comes back, one only in NEW goes)."""

    path: str
    source: str
    target: str
    hunks: tuple[Hunk, ...]


@dataclass(frozen=True)
class Group:
    """The hunks of one function (or a whole file added or removed): one candidate."""

    path: str
    function: str
    subsystem: str
    file: FileDiff  # the header lines; `hunks` are this group's only

    @property
    def hunks(self) -> tuple[Hunk, ...]:
        return self.file.hunks


def function_of(context: str) -> str:
    """`tcp_rcv_established()` from `void tcp_rcv_established(struct sock *sk, …`; the
    context itself where it is no call shape (`struct x {`), FILE_SCOPE where there is none."""
    text = context.strip().rstrip("{").strip()
    if call := _CALL.search(text):
        return f"{call.group(1)}()"
    return text or FILE_SCOPE


def hunk_function(hunk: Hunk) -> str:
    """The function (or declaration) a hunk changes: one that starts in its first changed
    line or in the context before it (git names the function above the hunk's first line:
    the previous one when the hunk starts on a definition, and in a header the declaration
    above the changed one), else git's function context."""
    starts = [function_of(line[1:]) for line in _leading(hunk) if _DEFINITION.match(line[1:])]
    named = [name for name in starts if not name.removesuffix("()").isupper()]  # no macros
    return named[-1] if named else function_of(hunk.context)


def _leading(hunk: Hunk) -> list[str]:
    """The context lines before the first change, then the first changed line."""
    lines = []
    for line in hunk.lines:
        lines.append(line)
        if not line.startswith(" "):
            break
    return lines


def run_diff(new: Path, old: Path) -> str:
    """`git diff` NEW → OLD of two trees, with none of the user's git configuration."""
    parent = Path(os.path.commonpath([new, old]))
    with tempfile.NamedTemporaryFile("w", suffix=".gitattributes") as attributes:
        attributes.write(_ATTRIBUTES)
        attributes.flush()
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        argv = ["git", "-c", f"core.attributesFile={attributes.name}", "-c",
                "core.quotePath=false", "diff", "--no-index", "--no-color", "--no-ext-diff",
                "--no-textconv", "--no-renames", "-U3", "--src-prefix=a/", "--dst-prefix=b/",
                str(new.relative_to(parent)), str(old.relative_to(parent))]  # fmt: skip
        try:
            proc = subprocess.run(argv, cwd=parent, capture_output=True, text=True, env=env,
                                  errors="surrogateescape")  # fmt: skip
        except OSError:
            raise KernelsError("git is missing: the miner diffs the trees with git") from None
    if proc.returncode not in (0, 1):
        raise KernelsError(f"git diff of {new} and {old} failed: {proc.stderr.strip()}")
    return _relative(proc.stdout, str(new.relative_to(parent)), str(old.relative_to(parent)))


def _relative(text: str, new: str, old: str) -> str:
    """The diff's file names relative to the trees' tops (`a/net/…`, `b/net/…`)."""
    lines = []
    for line in text.split("\n"):
        if line.startswith(("--- a/", "+++ b/", "diff --git ")):
            line = line.replace(f"a/{new}/", "a/").replace(f"b/{old}/", "b/")
            line = line.replace(f"a/{old}/", "a/").replace(f"b/{new}/", "b/")
        lines.append(line)
    return "\n".join(lines)


def _hunk(header: re.Match[str], lines: list[str], at: int) -> tuple[Hunk, int]:
    """The hunk whose body starts at `lines[at]`, and the index after it (a `\\ No newline`
    marker after its last line included)."""
    start, length = int(header.group(1)), int(header.group(2) or 1)
    result_length = int(header.group(4) or 1)
    body: list[str] = []
    old_left, new_left = length, result_length
    while at < len(lines) and (old_left > 0 or new_left > 0 or lines[at].startswith("\\")):
        line = lines[at]
        body.append(line)
        old_left -= line.startswith((" ", "-"))
        new_left -= line.startswith((" ", "+"))
        at += 1
    return Hunk(start, length, result_length, header.group(5).strip(), tuple(body)), at


def parse(text: str) -> list[FileDiff]:
    """Every text file's hunks (binary files have none to revert and are left out). Split at
    newlines only: kernel sources hold form feeds, which `splitlines` would also split at."""
    files: list[FileDiff] = []
    lines = text.split("\n")
    source = target = ""
    hunks: list[Hunk] = []
    at = 0
    while at <= len(lines):
        line = lines[at] if at < len(lines) else "diff --git (end)"
        at += 1
        if line.startswith("diff --git "):
            if hunks and source and target:
                path = (target if source == DEV_NULL else source).split("/", 1)[1]
                files.append(FileDiff(path, source, target, tuple(hunks)))
            source, target, hunks = "", "", []
        elif line.startswith("--- "):
            source = line[4:].rstrip("\t")
        elif line.startswith("+++ "):
            target = line[4:].rstrip("\t")
        elif header := _HUNK.match(line):
            hunk, at = _hunk(header, lines, at)
            hunks.append(hunk)
    return files


def groups(files: list[FileDiff]) -> list[Group]:
    """Hunks grouped by (file, function), in file order; an added or removed file is one
    group of its own."""
    found: list[Group] = []
    for diff in files:
        whole = DEV_NULL in (diff.source, diff.target)
        by_function: dict[str, list[Hunk]] = {}
        for hunk in diff.hunks:
            by_function.setdefault(WHOLE_FILE if whole else hunk_function(hunk), []).append(hunk)
        for function, hunks in by_function.items():
            part = FileDiff(diff.path, diff.source, diff.target, tuple(hunks))
            found.append(Group(diff.path, function, area_of_file(diff.path), part))
    return found


def _position(start: int, length: int) -> int:
    """A range's place as "lines before it": an empty range's start is the line before."""
    return start - 1 if length else start


def patch_text(diff: FileDiff) -> str:
    """A unified diff of these hunks alone: the result side's start lines are counted again,
    since hunks left out no longer shift them."""
    out = [f"--- {diff.source}\n", f"+++ {diff.target}\n"]
    shift = 0
    for hunk in diff.hunks:
        before = _position(hunk.start, hunk.length) + shift
        result_start = before + 1 if hunk.result_length else before
        context = f" {hunk.context}" if hunk.context else ""
        out.append(f"@@ -{hunk.start},{hunk.length} +{result_start},{hunk.result_length} @@"
                   f"{context}\n")  # fmt: skip
        out.extend(f"{line}\n" for line in hunk.lines)
        shift += hunk.result_length - hunk.length
    return "".join(out)


def check_applies(text: str, tree: Path, name: str) -> None:
    """The patch applies to `tree` exactly (no fuzz; one that looks already applied is
    refused, never taken backwards), or a KernelsError says why."""
    proc = subprocess.run(
        ["patch", "-p1", "--dry-run", "--batch", "--forward", "--fuzz=0", "-d", str(tree)],
        input=text, capture_output=True, text=True, errors="surrogateescape",
    )  # fmt: skip
    if proc.returncode != 0:
        raise KernelsError(f"candidate {name} does not apply to {tree}:\n"
                           f"{(proc.stdout + proc.stderr).strip()}")  # fmt: skip
