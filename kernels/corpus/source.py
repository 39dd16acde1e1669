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

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kernels.acquire import linux_source
from kernels.acquire.catalog import KernelSpec
from kernels.acquire.linux_source import Part, cached_origin, resolve_auto, tree_version
from kernels.corpus.runner import HELPERS, has_runner
from kernels.errors import KernelsError
from kernels.progress import Status

# Inside a kernel tree.
PACKETDRILL_DIR = PurePosixPath("tools/testing/selftests/net/packetdrill")
_HELPERS_FILE = PurePosixPath("tools/testing/selftests/kselftest/ktap_helpers.sh")
OPTION = "--kernel-pkt-corpus"  # the pytest option (kernels/corpus/pytest_plugin.py)
WHY_OPTION = "--kernel-pkt-corpus-why"  # why the host chose a guest's folder (not for users)


def _wanted(inner: PurePosixPath) -> bool:
    """The corpus needs the top Makefile (its version), the KTAP helper its runner sources
    and the packetdrill folder."""
    return inner in (PurePosixPath("Makefile"), _HELPERS_FILE) or inner.parent == PACKETDRILL_DIR


PART = Part(
    cache="ksft",
    about="tools/testing/selftests/net/packetdrill",
    noun="corpus",
    wanted=_wanted,
    present=lambda top: has_runner(top / PACKETDRILL_DIR),
)


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


def from_directory(path: Path) -> Corpus:
    """A folder the user names: a kernel tree, its ``tools/testing/selftests``, or the
    packetdrill folder itself."""
    path = path.expanduser().resolve()
    for candidate in (path, path / "net" / "packetdrill", path / PACKETDRILL_DIR):
        if has_runner(candidate):
            # The tree's top holds the version, five folders up (tools/testing/selftests/…).
            top = candidate.parents[4] if len(candidate.parents) > 4 else candidate
            return Corpus(candidate, cached_origin(top) or f"directory {path}", tree_version(top))
    raise KernelsError(
        f"{path}: no kernel packetdrill corpus here (looked for ksft_runner.sh with "
        f"{HELPERS} beside it in {path}, {path}/net/packetdrill and {path}/{PACKETDRILL_DIR}): "
        "name a kernel source tree or its tools/testing/selftests/net/packetdrill"
    )


def extract_deb(deb: Path, dest: Path) -> bool:
    """Unpack the corpus of a ``linux-source-<version>`` .deb into `dest` as a tree (Makefile,
    the packetdrill folder, the KTAP helper); False if the package has no corpus."""
    return linux_source.extract_deb(deb, dest, PART)


def for_kernel(spec: KernelSpec | None, status: Status) -> tuple[Corpus, str]:
    """``auto``: the corpus for a kernel of the catalog (None: the running kernel), and why
    this one (its own, or the newest because it has none)."""
    tree, why = linux_source.for_kernel(spec, PART, status)
    return Corpus(
        tree.top / PACKETDRILL_DIR, tree.origin or f"directory {tree.top}", tree.version
    ), why


def guest_args(pytest_args: list[str], spec: KernelSpec, status: Status) -> list[str]:
    """A guest's pytest arguments: ``--kernel-pkt-corpus auto`` (either spelling) becomes the folder
    ``auto`` means for `spec`, resolved here on the host, since a guest has no network and
    reads the cache through the shared file system; the reason goes with it, so the guest's
    report says why that corpus ran on its kernel, not that a folder was named."""
    return resolve_auto(pytest_args, OPTION, WHY_OPTION, lambda: _folder(for_kernel(spec, status)))


def _folder(chosen: tuple[Corpus, str]) -> tuple[str, str]:
    return str(chosen[0].path), chosen[1]
