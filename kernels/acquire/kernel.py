# SPDX-License-Identifier: GPL-2.0-only
"""A kernel ready to boot (or the running one), and how to tell its version.

Why two version fields: `release` is what `uname -r` prints and names the modules directory
(Debian: `6.1.0-56-cloud-amd64`, an ABI name); `version` is the exact build that was tested
(Debian: `6.1.192-1`), which is what bug fixes and expectations refer to.
"""

import json
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError

_DEBIAN_BUILD = re.compile(r"Debian (\d+\.\d+(?:\.\d+)?\S*)")
_LEADING_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")
BUILD_RECORD = "kernel.json"  # what a build from source writes beside its bzImage


@dataclass(frozen=True)
class GitSource:
    """The git checkout a kernel was built from, as KCIDB names a checkout: the commit, the
    repository's https address ("" when no remote has one), the branch ("" when detached) and,
    for a tree with uncommitted changes, KCIDB's patchset hash of them.

    Why the hash: without it a dashboard would file the build under the commit alone, and a
    developer's edited tree would pass for that commit."""

    commit: str
    repository_url: str = ""
    branch: str = ""
    patchset_hash: str = ""


@dataclass(frozen=True)
class BootableKernel:
    """A fetched kernel. `image` is None for the running kernel (the suite runs on the host);
    `git` is known for a kernel built from a git tree."""

    name: str
    release: str
    version: str
    image: Path | None = None
    modules: Path | None = None
    git: GitSource | None = None


def recorded_git(image: Path) -> GitSource | None:
    """The git checkout a build from source recorded beside the image it built, if any: a
    `path` kernel that is one of `scripts/build-kernel`'s results still names its source."""
    try:
        info = json.loads((image.parent / BUILD_RECORD).read_text())
        return GitSource(**info["git"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not one of our builds, or built from a tree that is no git checkout


def version_tuple(text: str) -> tuple[int, ...]:
    """The leading `X.Y[.Z]` of a version or release string as integers."""
    match = _LEADING_VERSION.search(text)
    if not match:
        raise KernelsError(f"cannot read a kernel version from {text!r}")
    return tuple(int(part) for part in match.group().split("."))


def version_under_test() -> tuple[int, ...]:
    """The upstream version of the kernel the tests run on: a guest's build (the matrix sets
    NETREGRESS_KERNEL_VERSION, e.g. Debian's ``6.1.176-1``, whose release string, ``6.1.0-50``,
    says less), else this host's release."""
    return version_tuple(os.environ.get("NETREGRESS_KERNEL_VERSION") or os.uname().release)


def build_version(banner: str, release: str) -> str:
    """The exact build from a kernel banner (`/proc/version` or the bzImage string).

    Debian kernels name the package version ("Debian 6.1.192-1"); other builds only have the
    release, whose leading digits are the upstream version.
    """
    match = _DEBIAN_BUILD.search(banner)
    return match.group(1) if match else release


def bzimage_banner(image: Path) -> str:
    """The version banner stored in a bzImage, or a clear error if it is not one.

    Why read the header ourselves: a bogus image must be refused before we spend a VM boot on
    it; the x86 boot protocol puts "HdrS" at 0x202 and the banner offset at 0x20e.
    """
    try:
        data = image.read_bytes()
    except OSError as exc:
        raise KernelsError(f"cannot read kernel image {image}: {exc.strerror}") from None
    if len(data) < 0x210 or data[0x202:0x206] != b"HdrS":
        raise KernelsError(f"{image} is not an x86 bzImage (no 'HdrS' boot header)")
    (offset,) = struct.unpack_from("<H", data, 0x20E)
    start = offset + 0x200
    banner = data[start : start + 256].split(b"\0", 1)[0].decode("ascii", "replace")
    if not banner or not banner[0].isdigit():
        raise KernelsError(f"{image}: the boot header has no kernel version string")
    return banner
