"""Where a kernel's source comes from: a Debian `linux-source-X.Y` package or a git tree.

Why two kinds but one result type: the builder only needs a source directory, a stable id
(which names the out-of-tree build dir, so every build of the same tree is incremental) and
whether it may write into the tree (only trees we extracted into the cache take patches).
"""

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from kernels.progress import Status

USR_SRC = Path("/usr/src")
_PACKAGE = re.compile(r"^linux-source-(\d+\.\d+)$")


@dataclass(frozen=True)
class SourceTree:
    """A kernel source directory ready for `make O=...`.

    `owned` is True for trees extracted into our cache: only those may be patched in place.
    """

    id: str
    path: Path
    owned: bool
    origin: str


def is_kernel_tree(path: Path) -> bool:
    """A top-level kernel tree has a Makefile with VERSION/PATCHLEVEL, Kconfig and arch/x86."""
    makefile = path / "Makefile"
    if not (makefile.is_file() and (path / "Kconfig").is_file() and (path / "arch/x86").is_dir()):
        return False
    head = makefile.read_text(errors="replace")[:2000]
    return "VERSION =" in head and "PATCHLEVEL =" in head


def git_tree(path: Path) -> SourceTree:
    """A user's kernel tree, used read-only (we build with O= into the cache)."""
    tree = path.expanduser().resolve()
    if not tree.is_dir():
        raise KernelsError(f"{path}: no such directory")
    if not is_kernel_tree(tree):
        raise KernelsError(
            f"{tree} is not a kernel source tree (no top-level Makefile with VERSION/PATCHLEVEL, "
            "Kconfig and arch/x86)"
        )
    if (tree / ".config").exists() or (tree / "include/config").exists():
        raise KernelsError(
            f"{tree} has been built in place (.config or include/config exists); out-of-tree "
            f"builds need a clean tree: run 'make -C {tree} mrproper' (it deletes your .config)"
        )
    digest = hashlib.sha256(str(tree).encode()).hexdigest()[:10]
    return SourceTree(id=f"tree-{tree.name}-{digest}", path=tree, owned=False, origin=str(tree))


def debian_tarball(package: str) -> Path:
    """The tarball an installed `linux-source-X.Y` package put under /usr/src (or a clear error)."""
    match = _PACKAGE.match(package)
    if not match:
        raise KernelsError(
            f"'{package}' is not a Debian kernel source package name (expected linux-source-X.Y, "
            "e.g. linux-source-6.1)"
        )
    found = sorted(USR_SRC.glob(f"{package}.tar.*"))
    if found:
        return found[0]
    known = subprocess.run(
        ["apt-cache", "show", "--no-all-versions", package], capture_output=True, text=True
    )
    if known.returncode != 0 or not known.stdout.strip():
        raise KernelsError(
            f"no such source package: {package} (apt-cache knows no package of that name; "
            "'apt-cache search --names-only ^linux-source-' lists the ones there are)"
        )
    raise KernelsError(f"{package} is not installed: run 'apt-get install {package}' (as root)")


def _tarball_stamp(tarball: Path) -> str:
    """Size + mtime: changes when apt upgrades the package, so the extraction is redone."""
    info = tarball.stat()
    return f"{tarball.name} {info.st_size} {int(info.st_mtime)}\n"


def extract_tarball(tarball: Path, dest: Path) -> None:
    """Unpack a one-directory source tarball as `dest` (replacing it), atomically by rename."""
    partial = dest.with_name(dest.name + ".partial")
    for stale in (partial, dest):
        if stale.exists():
            shutil.rmtree(stale)
    partial.mkdir(parents=True)
    # GNU tar, not tarfile: it is several times faster on a 140 MB .tar.xz.
    proc = subprocess.run(
        ["nice", "-n", "10", "tar", "-xf", str(tarball), "-C", str(partial)],
        capture_output=True,
        text=True,
    )
    top = list(partial.iterdir())
    if proc.returncode != 0 or len(top) != 1:
        reason = proc.stderr.strip() or "no single top directory"
        raise KernelsError(f"cannot extract {tarball}: {reason}")
    top[0].rename(dest)
    partial.rmdir()


def debian_source(package: str, status: Status) -> SourceTree:
    """Extract the package's tarball into the cache once (again after a package upgrade)."""
    tarball = debian_tarball(package)
    root = cache_dir("src")
    tree = root / package
    stamp = root / f"{package}.extracted"
    with locked(root / f"{package}.lock"):
        if not (stamp.is_file() and stamp.read_text() == _tarball_stamp(tarball)):
            status(f"extracting {tarball} into {root}")
            extract_tarball(tarball, tree)
            (root / f"{package}.applied").unlink(missing_ok=True)
            stamp.write_text(_tarball_stamp(tarball))
    if not is_kernel_tree(tree):
        raise KernelsError(f"{tarball} did not contain a kernel source tree")
    return SourceTree(id=package, path=tree, owned=True, origin=str(tarball))
