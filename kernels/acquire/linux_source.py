# SPDX-License-Identifier: GPL-2.0-only
"""Parts of a kernel's source tree: from the kernel's own tree, or Debian's
``linux-source-<version>`` package extracted (only the parts asked for) into the cache.

Why one module for every part: the kernel's packetdrill corpus (kernels/corpus/) and its shell
selftests (kernels/selftests/) both come from where the kernel under test comes from, never
from our repository, by the same rule: the kernel's own source tree; else the
``linux-source`` package of its Debian suite; else the newest one (sid), when the kernel's
own source has none of that part. Debian ships the source as a compressed tarball of the whole
tree (~150 MB) inside the package: a :class:`Part` names the files it needs, and they are
extracted once per package version, into a cache folder of that part's own.
"""

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, TypeVar

from kernels.acquire.catalog import (
    DebianKernel,
    KernelSpec,
    RunningKernel,
    SourceKernel,
    load_catalog,
    lookup,
)
from kernels.acquire.debian import AptSuite
from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from kernels.progress import Status

NEWEST_SUITE = "sid"  # Debian's newest kernels: the source a kernel without its own part uses
RECORD = "corpus.json"  # beside an extracted tree: the package it came from, or its absence
_SOURCE_PACKAGE = "linux-source"  # the metapackage that depends on linux-source-<version>
_PINNED = re.compile(r"^\s*(linux-source-[\d.]+)\s*\(\s*=\s*([^)\s]+)\s*\)")
T = TypeVar("T")
_MAKEFILE_FIELD = re.compile(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d+)\s*$", re.M)


@dataclass(frozen=True)
class Part:
    """What one user of the source needs from a tree.

    `cache` names its cache folder, `about` its files in messages and `noun` the whole in the
    reason a kernel runs another kernel's ("the newest corpus"); `wanted` says whether a path
    below the tree's top is extracted; `present` whether a tree (its top) holds the part.
    """

    cache: str
    about: str
    noun: str
    wanted: Callable[[PurePosixPath], bool]
    present: Callable[[Path], bool]


@dataclass(frozen=True)
class Tree:
    """A tree holding a part: its top folder, where it came from (for reports), and its kernel
    version ("" if unknown)."""

    top: Path
    origin: str
    version: str


def tree_version(tree: Path) -> str:
    """``VERSION.PATCHLEVEL.SUBLEVEL`` from a tree's top Makefile, or ""."""
    try:
        fields = dict(_MAKEFILE_FIELD.findall((tree / "Makefile").read_text(errors="replace")))
    except OSError:
        return ""
    parts = [fields.get(name) for name in ("VERSION", "PATCHLEVEL", "SUBLEVEL")]
    return ".".join(part for part in parts if part is not None)


def cached_origin(top: Path) -> str:
    """Where a tree of our cache came from (a Debian package), when it is one of ours, so a
    guest handed the folder reports the same origin as the host; "" otherwise."""
    try:
        return str(json.loads((top.parent / RECORD).read_text())["origin"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _inner_tarball(outer: tarfile.TarFile) -> tuple[tarfile.TarInfo, IO[bytes]] | None:
    """The source tarball (``usr/src/linux-source-<v>.tar.xz``) in the package's data."""
    for member in outer:
        name = PurePosixPath(member.name)
        if (
            name.parent.name == "src"
            and name.name.startswith("linux-source-")
            and (name.name.endswith((".tar.xz", ".tar.bz2", ".tar.gz")))
        ):
            handle = outer.extractfile(member)
            if handle is not None:
                return member, handle
    return None


def _below_top(name: str) -> PurePosixPath:
    """A tarball member's path below the tree's top folder (``linux-source-<v>/``)."""
    parts = PurePosixPath(name).parts[1:]
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def extract_deb(deb: Path, dest: Path, part: Part) -> bool:
    """Unpack the files `part` wants of a ``linux-source-<version>`` .deb into `dest` as a
    tree; False if the package's tree does not hold the part."""
    proc = subprocess.Popen(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    found = 0
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as outer:
            inner = _inner_tarball(outer)
            if inner is None:
                raise KernelsError(f"{deb.name}: no usr/src/linux-source-*.tar.* inside")
            with tarfile.open(fileobj=inner[1], mode="r|*") as tree:
                for member in tree:
                    target = _below_top(member.name)
                    if not part.wanted(target):
                        continue
                    out = dest / target
                    if member.issym() and not PurePosixPath(member.linkname).is_absolute():
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.unlink(missing_ok=True)
                        out.symlink_to(member.linkname)
                        continue
                    if not member.isfile():
                        continue
                    handle = tree.extractfile(member)
                    assert handle is not None
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(handle.read())
                    out.chmod(0o755 if member.mode & 0o100 else 0o644)
                    found += 1
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise KernelsError(f"{deb.name}: cannot read the source tarball: {exc}") from None
    finally:
        proc.stdout.close()
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.wait() != 0 and not found:
            raise KernelsError(f"dpkg-deb --fsys-tarfile {deb.name} failed: {stderr.strip()}")
    return found > 0 and part.present(dest)


def from_debian(suite: str, part: Part, status: Status) -> Tree | None:
    """`part` of the newest ``linux-source-<version>`` in Debian `suite`, from the cache or
    downloaded and extracted into it; None if that package's tree lacks the part (remembered,
    so the 150 MB are read once per package version and part)."""
    apt = AptSuite(suite)
    with locked(apt.root / "lock"):
        apt.refresh(status)
        meta_version = apt.newest(_SOURCE_PACKAGE)
        depends = apt.record(_SOURCE_PACKAGE, meta_version).get("Depends", "")
    pinned = [m for dep in depends.split(",") if (m := _PINNED.match(dep.split("|")[0]))]
    if not pinned:
        raise KernelsError(f"Debian {suite}: {_SOURCE_PACKAGE} names no linux-source-<version>")
    package, version = pinned[0].group(1), pinned[0].group(2)
    dest = cache_dir(part.cache, f"{package}_{version}")
    record = dest / RECORD
    with locked(dest.parent / f"{dest.name}.lock"):
        if not record.is_file():
            for stale in [p for p in dest.iterdir() if p.name != record.name]:
                shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
            with tempfile.TemporaryDirectory(dir=dest) as scratch:
                status(f"downloading {package} {version} (Debian {suite}) for its {part.about}")
                deb = apt.download(package, version, Path(scratch))
                status(f"extracting {part.about} from {deb.name}")
                present = extract_deb(deb, dest / "tree", part)
            origin = f"Debian {suite} {package} {version}"
            info = {"present": present, "origin": origin, "version": tree_version(dest / "tree")}
            record.write_text(json.dumps(info, indent=2))
    info = json.loads(record.read_text())
    if not info["present"]:
        return None
    return Tree(dest / "tree", info["origin"], info["version"])


def for_kernel(spec: KernelSpec | None, part: Part, status: Status) -> tuple[Tree, str]:
    """``auto``: the tree holding `part` for a kernel of the catalog (None: the running
    kernel), and why this one (its own source, its suite's package, or the newest)."""
    name = spec.name if spec is not None else "the running kernel"
    trees = (
        [spec.tree]
        if isinstance(spec, SourceKernel)
        else [Path("/lib/modules", os.uname().release, "source")]
        if spec is None or isinstance(spec, RunningKernel)
        else []
    )
    for tree in trees:
        if part.present(tree):
            return Tree(tree, cached_origin(tree), tree_version(tree)), f"the source tree of {name}"
    if isinstance(spec, DebianKernel):
        own = from_debian(spec.suite, part, status)
        if own is not None:
            return own, f"the linux-source package of {spec.name}'s suite"
    newest = from_debian(NEWEST_SUITE, part, status)
    if newest is None:
        raise KernelsError(f"Debian {NEWEST_SUITE}'s linux-source has no {part.about}")
    return newest, f"the newest {part.noun}: {name} has none of its own"


def resolve_auto(
    pytest_args: list[str], option: str, why_option: str, resolve: Callable[[], tuple[str, str]]
) -> list[str]:
    """A guest's pytest arguments: ``option auto`` (either spelling) becomes the folder
    `resolve` gives, resolved on the host (a guest has no network and reads the cache through
    the shared file system), with `why_option` carrying the reason, so the guest's report says
    why that source ran on its kernel, not that a folder was named."""
    out: list[str] = []
    words = iter(pytest_args)
    for word in words:
        value = next(words, "") if word == option else word.removeprefix(f"{option}=")
        if (word == option or value != word) and value == "auto":
            folder, why = resolve()
            out += [f"{option}={folder}", f"{why_option}={why}"]
        elif word == option:
            out += [word, value]
        else:
            out.append(word)
    return out


def chosen_for_session(
    wanted: str,
    why: str,
    kernel: str | None,
    named: Callable[[Path], T],
    auto: Callable[[KernelSpec | None], tuple[T, str]],
) -> tuple[T, str] | None:
    """What a session's ``auto|DIR|off`` option chose, and why: None for ``off``; the folder
    the user named; for ``auto``, the one of the kernel under test (a guest's
    NETREGRESS_KERNEL, else `kernel` — ``--kernel`` — else the running one)."""
    if wanted == "off":
        return None
    if wanted != "auto":
        return named(Path(wanted)), why or "named on the command line"
    name = os.environ.get("NETREGRESS_KERNEL") or kernel
    return auto(lookup(load_catalog(), name) if name else None)


class ToWorkers:
    """xdist: every worker takes the controller's choice (resolved, downloaded, built once),
    sent as the fields of its dataclass (a folder first) and the reason."""

    def __init__(self, stash_key: Any, worker_key: str) -> None:
        self.stash_key = stash_key
        self.worker_key = worker_key

    @classmethod
    def register(cls, config: Any, stash_key: Any, worker_key: str) -> None:
        """Register one with a controller session's plugin manager, when xdist is there."""
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(cls(stash_key, worker_key), f"{worker_key}-xdist")

    def pytest_configure_node(self, node: Any) -> None:
        chosen = node.config.stash.get(self.stash_key, None)
        node.workerinput[self.worker_key] = (
            None if chosen is None else [*(str(field) for field in astuple(chosen[0])), chosen[1]]
        )


def from_controller(given: list[str] | None, make: Callable[..., T]) -> tuple[T, str] | None:
    """A worker's copy of the controller's choice (:class:`ToWorkers`)."""
    if given is None:
        return None
    return make(Path(given[0]), *given[1:-1]), given[-1]
