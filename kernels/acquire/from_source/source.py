# SPDX-License-Identifier: GPL-2.0-only
"""Where a kernel's source comes from: a Debian `linux-source-X.Y` package or a git tree.

Why two kinds but one result type: the builder only needs a source directory, a stable id
(which names the out-of-tree build dir, so every build of the same tree is incremental) and
whether it may write into the tree (only trees we extracted into the cache take patches).
A git tree also says which checkout it is, so the reports can name the commit.
"""

import hashlib
import re
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from kernels.acquire.kernel import GitSource
from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from kernels.progress import Status

USR_SRC = Path("/usr/src")
_PACKAGE = re.compile(r"^linux-source-(\d+\.\d+)$")
_SCP_LIKE = re.compile(r"[^@/]+@(?P<host>[^:/]+):(?P<path>[^/].*)")  # git@host:path


@dataclass(frozen=True)
class SourceTree:
    """A kernel source directory ready for `make O=...`.

    `owned` is True for trees extracted into our cache: only those may be patched in place.
    """

    id: str
    path: Path
    owned: bool
    origin: str
    git: GitSource | None = None


def is_kernel_tree(path: Path) -> bool:
    """A top-level kernel tree has a Makefile with VERSION/PATCHLEVEL, Kconfig and arch/x86."""
    makefile = path / "Makefile"
    if not (makefile.is_file() and (path / "Kconfig").is_file() and (path / "arch/x86").is_dir()):
        return False
    head = makefile.read_text(errors="replace")[:2000]
    return "VERSION =" in head and "PATCHLEVEL =" in head


def https_url(remote: str) -> str:
    """A git remote's https:// address (the only kind KCIDB takes), "" for one that has none.

    git://, http:// and ssh remotes (URL or `user@host:path`) name hosts that serve the same
    repository over https (git.kernel.org, GitHub, GitLab); credentials and an ssh port are
    dropped, so no secret of a remote URL reaches a report; a local path has no address."""
    scp = _SCP_LIKE.fullmatch(remote)
    if scp is not None:
        return f"https://{scp['host']}/{scp['path']}"
    parts = urllib.parse.urlsplit(remote)
    if parts.scheme not in ("https", "http", "git", "ssh") or not parts.hostname:
        return ""
    host = parts.netloc.rpartition("@")[2] if parts.scheme == "https" else parts.hostname
    return urllib.parse.urlunsplit(("https", host, parts.path, "", ""))


def _git(tree: Path, *args: str) -> bytes | None:
    """A read-only git query in `tree` (its output), None when git fails or is missing.

    `safe.directory`: run as root on a user's tree, git refuses a repository it does not own;
    trusting this one tree for this one query reads it without changing anyone's config.
    `--no-optional-locks`: a query never writes the index of a tree we only read."""
    argv = ["git", "--no-optional-locks", "-c", f"safe.directory={tree}", "-C", str(tree), *args]
    try:
        proc = subprocess.run(argv, capture_output=True)
    except OSError:
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_source(tree: Path) -> GitSource | None:
    """Which checkout `tree` is, when it is the top of a git work tree with a commit.

    Uncommitted changes to tracked files become KCIDB's patchset hash of one patch (their
    diff against the commit); untracked files are not part of it."""
    top, head = _git(tree, "rev-parse", "--show-toplevel"), _git(tree, "rev-parse", "HEAD")
    if top is None or head is None or Path(top.decode().strip()).resolve() != tree:
        return None
    diff = _git(tree, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "HEAD")
    if diff is None:
        return None  # a commit whose changes we cannot tell is no checkout we can name
    branch = (_git(tree, "symbolic-ref", "--short", "-q", "HEAD") or b"").decode().strip()
    remote = _git(tree, "config", "--get", f"branch.{branch}.remote") if branch else None
    url = _git(tree, "remote", "get-url", remote.decode().strip() if remote else "origin")
    patchset = ""
    if diff:
        patchset = hashlib.sha256(f"{hashlib.sha256(diff).hexdigest()}\n".encode()).hexdigest()
    return GitSource(
        commit=head.decode().strip(),
        repository_url=https_url(url.decode().strip()) if url else "",
        branch=branch,
        patchset_hash=patchset,
    )


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
    return SourceTree(
        id=f"tree-{tree.name}-{digest}", path=tree, owned=False, origin=str(tree),
        git=git_source(tree),
    )  # fmt: skip


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
