# SPDX-License-Identifier: GPL-2.0-only
"""Where the kernel's own packetdrill corpus comes from: a kernel source tree, Debian's
``linux-source-<version>`` package, or a folder the user names.

Why never from our repository: the corpus is the kernel's (GPL, written by the people who
write the TCP code) and version-matched to the kernel it ships with, so it comes from where
the kernel under test comes from. Debian ships it inside ``linux-source-<version>`` (a
compressed tarball of the whole tree, ~150 MB): only the packetdrill folder and the one KTAP
helper its runner sources are extracted, once per package version, into the netregress cache.
A kernel without a corpus of its own (Debian's 5.10 and 6.1 have none; the folder arrived in
6.12) runs the newest one, and every report says which corpus ran on which kernel.
"""

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from kernels.acquire.catalog import DebianKernel, KernelSpec, RunningKernel, SourceKernel
from kernels.acquire.debian import AptSuite
from kernels.corpus.runner import HELPERS, has_runner
from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from kernels.progress import Status

# Inside a kernel tree.
PACKETDRILL_DIR = PurePosixPath("tools/testing/selftests/net/packetdrill")
_HELPERS_FILE = PurePosixPath("tools/testing/selftests/kselftest/ktap_helpers.sh")
OPTION = "--kernel-pkt-corpus"  # the pytest option (kernels/corpus/pytest_plugin.py)
WHY_OPTION = "--kernel-pkt-corpus-why"  # why the host chose a guest's folder (not for users)
_RECORD = "corpus.json"  # beside an extracted tree: the package it came from, or its absence
NEWEST_SUITE = "sid"  # Debian's newest kernels: the corpus a kernel without one runs
_SOURCE_PACKAGE = "linux-source"  # the metapackage that depends on linux-source-<version>
_PINNED = re.compile(r"^\s*(linux-source-[\d.]+)\s*\(\s*=\s*([^)\s]+)\s*\)")
_MAKEFILE_FIELD = re.compile(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d+)\s*$", re.M)


@dataclass(frozen=True)
class Corpus:
    """A folder holding the corpus and its runner (``.../selftests/net/packetdrill``), where
    it came from (for reports), and the kernel version it belongs to ("" if unknown)."""

    path: Path
    origin: str
    version: str

    def describe(self) -> str:
        of = f"Linux {self.version} " if self.version else ""
        return f"{of}packetdrill selftests from {self.origin} ({self.path})"


def tree_version(tree: Path) -> str:
    """``VERSION.PATCHLEVEL.SUBLEVEL`` from a tree's top Makefile, or ""."""
    try:
        fields = dict(_MAKEFILE_FIELD.findall((tree / "Makefile").read_text(errors="replace")))
    except OSError:
        return ""
    parts = [fields.get(name) for name in ("VERSION", "PATCHLEVEL", "SUBLEVEL")]
    return ".".join(part for part in parts if part is not None)


def from_directory(path: Path) -> Corpus:
    """A folder the user names: a kernel tree, its ``tools/testing/selftests``, or the
    packetdrill folder itself."""
    path = path.expanduser().resolve()
    for candidate in (path, path / "net" / "packetdrill", path / PACKETDRILL_DIR):
        if has_runner(candidate):
            # The tree's top holds the version, five folders up (tools/testing/selftests/…).
            top = candidate.parents[4] if len(candidate.parents) > 4 else candidate
            return Corpus(candidate, _origin(top) or f"directory {path}", tree_version(top))
    raise KernelsError(
        f"{path}: no kernel packetdrill corpus here (looked for ksft_runner.sh with "
        f"{HELPERS} beside it in {path}, {path}/net/packetdrill and {path}/{PACKETDRILL_DIR}): "
        "name a kernel source tree or its tools/testing/selftests/net/packetdrill"
    )


def _origin(top: Path) -> str:
    """Where a tree of our cache came from (a Debian package), when it is one of ours, so a
    guest handed the folder reports the same origin as the host."""
    try:
        return str(json.loads((top.parent / _RECORD).read_text())["origin"])
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


def _wanted(name: str) -> PurePosixPath | None:
    """A tarball member's path below the tree's top folder if the corpus needs it."""
    parts = PurePosixPath(name).parts[1:]  # drop linux-source-<v>/
    inner = PurePosixPath(*parts) if parts else PurePosixPath(".")
    if inner == PurePosixPath("Makefile") or inner == _HELPERS_FILE:
        return inner
    if inner.parent == PACKETDRILL_DIR:
        return inner
    return None


def extract_deb(deb: Path, dest: Path) -> bool:
    """Unpack the corpus of a ``linux-source-<version>`` .deb into `dest` as a tree (Makefile,
    the packetdrill folder, the KTAP helper); False if the package has no corpus."""
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
                    target = _wanted(member.name)
                    if target is None or not member.isfile():
                        continue
                    handle = tree.extractfile(member)
                    assert handle is not None
                    out = dest / target
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(handle.read())
                    out.chmod(0o755 if member.mode & 0o100 else 0o644)
                    found += target.parent == PACKETDRILL_DIR
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise KernelsError(f"{deb.name}: cannot read the source tarball: {exc}") from None
    finally:
        proc.stdout.close()
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.wait() != 0 and not found:
            raise KernelsError(f"dpkg-deb --fsys-tarfile {deb.name} failed: {stderr.strip()}")
    return found > 0 and has_runner(dest / PACKETDRILL_DIR)


def from_debian(suite: str, status: Status) -> Corpus | None:
    """The corpus of the newest ``linux-source-<version>`` in Debian `suite`, from the cache
    or downloaded and extracted into it; None if that package has no corpus (remembered, so
    the 150 MB are read once per package version)."""
    apt = AptSuite(suite)
    with locked(apt.root / "lock"):
        apt.refresh(status)
        meta_version = apt.newest(_SOURCE_PACKAGE)
        depends = apt.record(_SOURCE_PACKAGE, meta_version).get("Depends", "")
    pinned = [m for dep in depends.split(",") if (m := _PINNED.match(dep.split("|")[0]))]
    if not pinned:
        raise KernelsError(f"Debian {suite}: {_SOURCE_PACKAGE} names no linux-source-<version>")
    package, version = pinned[0].group(1), pinned[0].group(2)
    dest = cache_dir("ksft", f"{package}_{version}")
    record = dest / _RECORD
    with locked(dest.parent / f"{dest.name}.lock"):
        if not record.is_file():
            for stale in [p for p in dest.iterdir() if p.name != record.name]:
                shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
            with tempfile.TemporaryDirectory(dir=dest) as scratch:
                status(f"downloading {package} {version} (Debian {suite}) for its selftests")
                deb = apt.download(package, version, Path(scratch))
                status(f"extracting tools/testing/selftests/net/packetdrill from {deb.name}")
                present = extract_deb(deb, dest / "tree")
            origin = f"Debian {suite} {package} {version}"
            info = {"present": present, "origin": origin, "version": tree_version(dest / "tree")}
            record.write_text(json.dumps(info, indent=2))
    info = json.loads(record.read_text())
    if not info["present"]:
        return None
    return Corpus(dest / "tree" / PACKETDRILL_DIR, info["origin"], info["version"])


def for_kernel(spec: KernelSpec | None, status: Status) -> tuple[Corpus, str]:
    """``auto``: the corpus for a kernel of the catalog (None: the running kernel), and why
    this one (its own, or the newest because it has none)."""
    trees = (
        [spec.tree]
        if isinstance(spec, SourceKernel)
        else [Path("/lib/modules", os.uname().release, "source")]
        if spec is None or isinstance(spec, RunningKernel)
        else []
    )
    for tree in trees:
        try:
            return from_directory(
                tree
            ), f"the source tree of {spec.name if spec else 'the running kernel'}"
        except KernelsError:
            pass  # an older tree, or none: no corpus of its own
    if isinstance(spec, DebianKernel):
        own = from_debian(spec.suite, status)
        if own is not None:
            return own, f"the linux-source package of {spec.name}'s suite"
    newest = from_debian(NEWEST_SUITE, status)
    if newest is None:
        raise KernelsError(f"Debian {NEWEST_SUITE}'s linux-source has no packetdrill selftests")
    name = spec.name if spec is not None else "the running kernel"
    return newest, f"the newest corpus: {name} has none of its own"


def guest_args(pytest_args: list[str], spec: KernelSpec, status: Status) -> list[str]:
    """A guest's pytest arguments: ``--kernel-pkt-corpus auto`` (either spelling) becomes the folder
    ``auto`` means for `spec`, resolved here on the host, since a guest has no network and
    reads the cache through the shared file system; the reason goes with it, so the guest's
    report says why that corpus ran on its kernel, not that a folder was named."""
    option = OPTION
    out: list[str] = []
    words = iter(pytest_args)
    for word in words:
        value = next(words, "") if word == option else word.removeprefix(f"{option}=")
        if (word == option or value != word) and value == "auto":
            corpus, why = for_kernel(spec, status)
            out += [f"{option}={corpus.path}", f"{WHY_OPTION}={why}"]
        elif word == option:
            out += [word, value]
        else:
            out.append(word)
    return out
