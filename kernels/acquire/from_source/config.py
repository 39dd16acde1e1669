# SPDX-License-Identifier: GPL-2.0-only
"""The kernel config: the tree's own x86_64 defconfig + kvm_guest.config + our fragment.

Why from the tree's own files: a config carried over from another version silently loses or
renames symbols; starting from the tree's defconfig and checking afterwards that every `=y` of
our fragment survived makes a missing feature a build error instead of a confusing test skip.
"""

import re
from pathlib import Path

from kernels.errors import KernelsError

FRAGMENT = Path(__file__).resolve().parents[2] / "configs" / "netregress.config"
BASES = ("arch/x86/configs/x86_64_defconfig", "kernel/configs/kvm_guest.config")
BUILT_IN = re.compile(r"^(CONFIG_\w+)=y$", re.MULTILINE)


def allconfig(tree: Path, fragments: list[Path]) -> str:
    """The KCONFIG_ALLCONFIG text: later files override earlier ones, symbol by symbol."""
    parts = [tree / base for base in BASES if (tree / base).is_file()]
    if not parts:
        raise KernelsError(f"{tree}: no {BASES[0]} (only x86_64 builds are supported)")
    text = ""
    for path in [*parts, *fragments]:
        try:
            text += f"# --- {path}\n{path.read_text()}\n"
        except OSError as exc:
            raise KernelsError(f"cannot read config fragment {path}: {exc.strerror}") from None
    return text


def missing_built_ins(fragments: list[Path], config: Path) -> list[str]:
    """The `CONFIG_X=y` lines of the fragments that the final .config does not have."""
    final = set(BUILT_IN.findall(config.read_text()))
    wanted: list[str] = []
    for path in fragments:
        wanted += BUILT_IN.findall(path.read_text())
    return [symbol for symbol in dict.fromkeys(wanted) if symbol not in final]
