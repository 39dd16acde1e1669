# SPDX-License-Identifier: GPL-2.0-only
"""Patches applied to a cache source tree, reversibly.

Why reversible in place instead of one tree per patch set: the out-of-tree build dir is tied
to its source path, so keeping one tree per source and swapping patches in and out makes a
stock ↔ patched switch an incremental rebuild of the touched files (a minute, not a cold
build). The applied set is recorded next to the tree, so the next build knows what to undo.
"""

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError
from kernels.progress import Status


@dataclass(frozen=True)
class Patch:
    """A patch file by name and content (content decides whether it is already applied).

    `reverse`: the patch is carried applied backwards (a real fix taken out again, the way
    `scripts/mutants --revert` puts a fixed bug back).
    """

    name: str
    text: str
    reverse: bool = False

    @classmethod
    def read(cls, path: Path) -> "Patch":
        try:
            text = path.read_text()
        except OSError as exc:
            raise KernelsError(f"cannot read patch {path}: {exc.strerror}") from None
        if "\n+++ " not in text and not text.startswith("+++ "):
            raise KernelsError(f"{path} is not a unified diff (no '+++' file header)")
        return cls(name=path.name, text=text)


def _patch(tree: Path, patch: Patch, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-d", str(tree), *flags],
        input=patch.text,
        capture_output=True,
        text=True,
    )


def _apply(tree: Path, patch: Patch, reverse: bool) -> None:
    """Dry-run first, so a patch that does not fit leaves the tree untouched. `reverse` undoes
    the patch as it is carried (a reversed patch is undone by applying it forwards)."""
    flags = ["-R"] if reverse != patch.reverse else ["--forward"]
    for extra in (["--dry-run"], []):
        proc = _patch(tree, patch, *flags, *extra)
        if proc.returncode != 0:
            action = "reverse" if reverse else "apply"
            raise KernelsError(
                f"cannot {action} {patch.name} on {tree}:\n{(proc.stdout + proc.stderr).strip()}"
            )


def sync_patches(tree: Path, record: Path, wanted: list[Patch], status: Status) -> None:
    """Make the tree carry exactly `wanted`, in order, touching as few files as possible.

    The longest common prefix of the applied and wanted lists stays; the rest of the applied
    list is reversed (last first) and the rest of the wanted list applied.
    """
    applied = [Patch(**item) for item in json.loads(record.read_text())] if record.is_file() else []
    keep = 0
    while keep < min(len(applied), len(wanted)) and applied[keep] == wanted[keep]:
        keep += 1
    for patch in reversed(applied[keep:]):
        status(f"reverting {patch.name}")
        _apply(tree, patch, reverse=True)
        applied.pop()
        record.write_text(json.dumps([vars(p) for p in applied]))
    for patch in wanted[keep:]:
        status(f"applying {patch.name}")
        _apply(tree, patch, reverse=False)
        applied.append(patch)
        record.write_text(json.dumps([vars(p) for p in applied]))
