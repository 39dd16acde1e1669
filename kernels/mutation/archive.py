# SPDX-License-Identifier: GPL-2.0-only
"""Two versions of a Debian `linux-source-X.Y` package, as far as the miner needs them: the
chosen paths of the source tree and the changelog, kept in the cache.

Why stream extraction: each .deb is ~150 MB holding a .tar.xz of ~1.5 GB and 90,000 files,
of which the miner wants a few hundred. The .deb's data tarball is read as a stream
(`dpkg-deb --fsys-tarfile`), the source tarball inside it as a second stream, and only the
members under the chosen paths are written: nothing else touches the disk, and one pass
takes ~10 s. The .deb stays in the cache, so other paths later cost no new download.

Why the machine's own apt (unlike kernels/acquire/debian.py's private lists): the versions a
user names are the ones `apt-cache madison` lists here, the security suite included, and
`apt-get download` installs nothing.
"""

import hashlib
import lzma
import re
import shutil
import signal
import subprocess
import tarfile
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from kernels.errors import KernelsError
from kernels.mutation.areas import matches
from kernels.paths import cache_dir, locked
from kernels.progress import Status

PACKAGE = re.compile(r"^linux-source-\d+\.\d+$")
CHANGELOG = "changelog.Debian"
_STEPS = 4  # progress lines per extraction: 25 %, 50 %, 75 %, 100 %


@dataclass(frozen=True)
class Version:
    """One version's extracted part: the tree (chosen paths only) and its changelog text."""

    version: str
    tree: Path
    changelog: str
    files: tuple[str, ...]  # the tree's files, relative, sorted


def check_package(package: str) -> None:
    if not PACKAGE.match(package):
        raise KernelsError(
            f"'{package}' is not a Debian kernel source package (expected linux-source-X.Y, "
            "e.g. linux-source-6.12; 'apt-cache search --names-only ^linux-source-' lists them)"
        )


def check_pattern(pattern: str) -> str:
    """A path glob relative to the top of the tree, normalised (no trailing slash)."""
    pure = PurePosixPath(pattern)
    if not pattern.strip() or pure.is_absolute() or ".." in pure.parts:
        raise KernelsError(
            f"--paths {pattern!r}: a path inside the kernel tree is relative and stays in it "
            "(e.g. net/ipv4, net/ipv4/tcp*.c, include/net/tcp.h)"
        )
    return str(pure)


def _apt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    tool = args[0]
    if shutil.which(tool) is None:
        raise KernelsError(f"{tool} is missing: the miner fetches Debian packages with apt")
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)


def served(package: str) -> list[str]:
    """The versions of `package` this machine's apt can download, newest first."""
    proc = _apt("apt-cache", "madison", package)
    versions = []
    for line in proc.stdout.splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) == 3 and fields[0] == package:
            versions.append(fields[1])
    return list(dict.fromkeys(versions))


def _download(package: str, version: str, debs: Path, status: Status) -> Path:
    """The cached .deb, downloaded first if it is not there yet."""
    name = f"{package}_{version.replace(':', '%3a')}_all.deb"
    deb = debs / name
    if deb.is_file():
        return deb
    versions = served(package)
    if not versions:
        raise KernelsError(
            f"apt knows no version of {package}: run 'apt-get update' (as root), or check the "
            "name with 'apt-cache search --names-only ^linux-source-'"
        )
    if version not in versions:
        raise KernelsError(
            f"{package} {version} is not served by this machine's apt; served: "
            f"{', '.join(versions)}"
        )
    size = _apt("apt-cache", "show", f"{package}={version}").stdout
    megabytes = int(m.group(1)) / 1e6 if (m := re.search(r"^Size: (\d+)", size, re.M)) else 0
    status(f"downloading {package} {version} ({megabytes:.0f} MB) into {debs}")
    partial = debs / "partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    start = time.monotonic()
    proc = _apt("apt-get", "-o", "APT::Sandbox::User=root", "download", f"{package}={version}",
                cwd=partial)  # fmt: skip
    got = sorted(partial.glob("*.deb"))
    if proc.returncode != 0 or len(got) != 1:
        detail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise KernelsError(f"apt-get download {package}={version} failed: {detail}")
    got[0].rename(deb)
    partial.rmdir()
    status(f"downloaded {deb.name} in {time.monotonic() - start:.1f} s")
    return deb


class _Progress:
    """Says how far through a stream of `total` bytes a pass is, at each quarter."""

    def __init__(self, total: int, say: Status) -> None:
        self._total, self._say, self._next = max(total, 1), say, 1

    def at(self, done: int) -> None:
        while self._next <= _STEPS and done * _STEPS >= self._next * self._total:
            self._say(f"{100 * self._next // _STEPS} % of {self._total / 1e6:.0f} MB")
            self._next += 1


@contextmanager
def _data_tar(deb: Path) -> Iterator[tarfile.TarFile]:
    """The .deb's data tarball, read as a stream (dpkg-deb reads every compression Debian
    uses); a download that is not a readable .deb is removed, so the next run fetches it
    again."""
    if shutil.which("dpkg-deb") is None:
        raise KernelsError("dpkg-deb is missing: the miner reads Debian packages")
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None  # both are pipes
    broken = ""
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as data:
            yield data
    except (tarfile.TarError, EOFError, lzma.LZMAError, zlib.error) as exc:
        broken = str(exc) or type(exc).__name__
    finally:
        proc.stdout.close()
        error = proc.stderr.read().decode(errors="replace").strip()
        if proc.wait() not in (0, -signal.SIGPIPE) and error:
            broken = error
    if broken:
        deb.unlink(missing_ok=True)
        raise KernelsError(f"cannot read {deb} ({broken}); removed it: run again to download "
                           "it anew")  # fmt: skip


def _inside(name: str) -> str | None:
    """A source tarball member's path below its top directory, None for one that would
    leave the tree or is the top itself."""
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or len(pure.parts) < 2:
        return None
    return str(PurePosixPath(*pure.parts[1:]))


def _extract_source(source: IO[bytes], size: int, patterns: tuple[str, ...], into: Path,
                    status: Status) -> None:  # fmt: skip
    """Write the regular files under `patterns` from a source tarball stream of `size`
    (compressed) bytes, saying how far it is."""
    progress = _Progress(size, lambda text: status(f"extracting: {text}"))
    with tarfile.open(fileobj=source, mode="r|*") as tarball:
        for count, member in enumerate(tarball):
            if count % 5000 == 0:
                progress.at(source.tell())
            path = _inside(member.name)
            if path is None or not member.isfile():
                continue
            if matches(path, *patterns):
                data = tarball.extractfile(member)
                assert data is not None  # a regular file always has data
                target = into / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data.read())
    progress.at(size)


def _extract(deb: Path, patterns: tuple[str, ...], into: Path, status: Status) -> str:
    """One pass over the .deb: the chosen paths into `into`, and the changelog's text."""
    changelog, source = "", False
    with _data_tar(deb) as data:
        for member in data:
            name = PurePosixPath(member.name)
            packed = data.extractfile(member) if member.isfile() else None
            if packed is None:
                continue
            if name.name == f"{CHANGELOG}.gz" and "doc" in name.parts:
                changelog = zlib.decompress(packed.read(), wbits=31).decode(errors="replace")
            elif name.parent.name == "src" and ".tar" in name.name:
                _extract_source(packed, member.size, patterns, into, status)
                source = True
    if not (source and changelog):
        what = f"{CHANGELOG}.gz" if source else "source tarball under usr/src"
        raise KernelsError(f"{deb} holds no {what}: is it a linux-source package?")
    return changelog


def fetch(package: str, version: str, patterns: tuple[str, ...], status: Status) -> Version:
    """The version's chosen paths and changelog, from the cache or downloaded and extracted.

    The tree is kept per set of paths (`trees/<digest>`), complete or not at all: it is
    written beside its final name and renamed when the pass ends."""
    base = cache_dir("mined", package)
    debs = base / "debs"
    debs.mkdir(exist_ok=True)
    digest = hashlib.sha256("\0".join(sorted(patterns)).encode()).hexdigest()[:12]
    where = base / version.replace(":", "%3a")
    tree, changelog = where / f"tree-{digest}", where / CHANGELOG
    with locked(base / f"{version}.lock"):
        if not (tree.is_dir() and changelog.is_file()):
            deb = _download(package, version, debs, status)
            partial = where / f"tree-{digest}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            status(f"extracting {len(patterns)} path(s) and the changelog of {version}")
            start = time.monotonic()
            text = _extract(deb, patterns, partial, status)
            changelog.write_text(text)
            shutil.rmtree(tree, ignore_errors=True)
            partial.rename(tree)
            status(f"extracted {version} in {time.monotonic() - start:.1f} s")
    files = tuple(sorted(str(path.relative_to(tree)) for path in tree.rglob("*") if path.is_file()))
    return Version(version, tree, changelog.read_text(), files)
