# SPDX-License-Identifier: GPL-2.0-only
"""``scripts/conformance build-reference --source DIR``: a packetdrill binary in the cache.

The project never contains upstream code; users point this at a google/packetdrill checkout
of their choice. The tree's sources (not its build products) are copied into
``$XDG_CACHE_HOME/netregress/packetdrill/<hash>/`` and built there with upstream's own
``./configure && make``, so the user's tree is left untouched and each source version gets
its own binary. A second call for the same sources only prints the cached path.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from kernels.paths import locked
from netregress.errors import NetregressError, run_cli

TOOLS = ("bison", "flex", "make")
COMPILERS = ("gcc", "cc")
_BUILD_PRODUCTS = (".o", ".a", ".so")
_SUBDIR = Path("gtests/net/packetdrill")


class BuildError(NetregressError):
    """Something the user can fix: a wrong folder, a missing tool, a failed build."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "netregress" / "packetdrill"


def source_dir(given: Path) -> Path:
    """The folder holding ``configure`` and ``packetdrill.c``: the one given, or its
    ``gtests/net/packetdrill`` (a whole checkout)."""
    for candidate in (given, given / _SUBDIR):
        if (candidate / "configure").is_file() and (candidate / "packetdrill.c").is_file():
            return candidate
    raise BuildError(
        f"{given}: not a packetdrill source tree (no configure and packetdrill.c "
        f"here or in {_SUBDIR})"
    )


def missing_tools() -> list[str]:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if not any(shutil.which(cc) for cc in COMPILERS):
        missing.append("gcc")
    return missing


def _is_elf(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"\x7fELF"


def source_files(src: Path) -> list[Path]:
    """Every source file of the tree (relative), without objects, binaries or the
    ``Makefile`` symlink that ``configure`` creates."""
    files = []
    for path in sorted(src.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.suffix in _BUILD_PRODUCTS:
            continue
        if _is_elf(path):
            continue
        files.append(path.relative_to(src))
    return files


def digest(src: Path, files: list[Path]) -> str:
    sha = hashlib.sha256()
    for rel in files:
        sha.update(str(rel).encode() + b"\0" + (src / rel).read_bytes() + b"\0")
    return sha.hexdigest()[:16]


def build(given: Path, say: Callable[[str], None] = print) -> Path:
    """Build (or find) the binary for the tree at ``given``; returns its path."""
    src = source_dir(given.resolve())
    files = source_files(src)
    target_dir = cache_root() / digest(src, files)
    binary = target_dir / "packetdrill"
    with locked(cache_root() / "build.lock"):
        if binary.is_file():
            return binary
        missing = missing_tools()
        if missing:
            raise BuildError(
                f"missing build tools: {', '.join(missing)} "
                f"(Debian: apt-get install {' '.join(missing)})"
            )
        with tempfile.TemporaryDirectory(dir=cache_root(), prefix="build-") as tmp:
            work = Path(tmp) / "src"
            for rel in files:
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / rel, work / rel)
            say(f"building packetdrill from {src} in {work}")
            _run(["sh", "./configure"], work)
            _run(["make", f"-j{os.cpu_count() or 1}", "packetdrill"], work)
            target_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / "packetdrill", binary.with_suffix(".tmp"))
            (target_dir / "SOURCE").write_text(f"{src}\n")
            os.replace(binary.with_suffix(".tmp"), binary)
    return binary


def _run(argv: list[str], cwd: Path) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise BuildError(f"'{' '.join(argv)}' failed (status {done.returncode}):\n{tail}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/conformance build-reference",
        description="Build a packetdrill binary from a source tree into the cache and print "
        "its path (for --reference).",
    )
    parser.add_argument(
        "--source",
        required=True,
        type=Path,
        metavar="DIR",
        help="a google/packetdrill checkout (or its gtests/net/packetdrill)",
    )
    args = parser.parse_args(argv)

    def body() -> int:
        print(build(args.source, lambda text: print(text, file=sys.stderr)))
        return 0

    return run_cli("build-reference", body)
