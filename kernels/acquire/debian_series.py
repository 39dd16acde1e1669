# SPDX-License-Identifier: GPL-2.0-only
"""The packaged kernels a Debian suite serves, as one ordered series per upstream branch.

Why a listing of ABI packages and not of the flavour's metapackage: the metapackage only ever
names the newest build, while every kernel ABI has a package of its own
(``linux-image-6.1.0-47-cloud-amd64`` … ``-56-…``), and the archive keeps serving the older
ones until the next point release. Those are the builds users actually ran, each one a
`DebianKernel` pin a matrix entry can name again.

Why `dpkg --compare-versions`: Debian's ordering (epochs, ``~``, ``+debNuM``) is subtle, and
dpkg is the tool that defines it; nothing in the virtualenv implements it.
"""

import functools
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from kernels.acquire.catalog import DebianKernel
from kernels.acquire.debian import AptSuite
from kernels.acquire.kernel import version_tuple
from kernels.errors import KernelsError
from kernels.paths import locked
from kernels.progress import Status

_UPSTREAM = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Packaged:
    """One packaged kernel: its package, the ABI the package names (``6.1.0-51``), the Debian
    version (``6.1.177-1``) and the pocket that serves it (``bookworm-security``)."""

    package: str
    abi: str
    version: str
    pocket: str

    @property
    def upstream(self) -> str:
        """The upstream stable release the build carries: ``6.1.177-1`` → ``6.1.177``."""
        match = _UPSTREAM.match(self.version)
        if match is None:
            raise KernelsError(f"{self.package} {self.version}: no upstream version in it")
        return match.group(0)

    @property
    def branch(self) -> str:
        """The upstream stable branch: ``6.1``."""
        return ".".join(self.upstream.split(".")[:2])

    def spec(self, suite: str, flavour: str) -> DebianKernel:
        """The catalog entry that boots exactly this build (`version` pins its ABI)."""
        return DebianKernel(name=f"{suite}-{self.abi}", suite=suite, flavour=flavour,
                            version=self.abi, default=False)  # fmt: skip


def compare_versions(left: str, right: str) -> int:
    """Debian's order of two versions (-1, 0, 1), as dpkg defines it."""
    if shutil.which("dpkg") is None:
        raise KernelsError("dpkg is missing: Debian versions are ordered with dpkg")
    for result, relation in ((-1, "lt"), (0, "eq")):
        if subprocess.run(["dpkg", "--compare-versions", left, relation, right]).returncode == 0:
            return result
    return 1


def abi_packages(search: str, flavour: str) -> dict[str, str]:
    """ABI → package name from `apt-cache search --names-only` output: the signed image of
    each ABI, or its ``-unsigned`` one where only that is served (debug symbols never)."""
    # An ABI has more than the branch: 6.1.0-47, 6.12.107+deb12 (linux-image-6.1-<flavour> is
    # a metapackage of bullseye's 6.1 backports, not a build).
    name = re.compile(
        rf"^linux-image-(?P<abi>\d+\.\d+[.+-]\S*?)-{re.escape(flavour)}(?P<u>-unsigned)?$"
    )
    found: dict[str, str] = {}
    for line in search.splitlines():
        match = name.match(line.split(" - ", 1)[0].strip())
        if match and (match["abi"] not in found or not match["u"]):
            found[match["abi"]] = match.group(0)
    return found


def madison(text: str, package: str) -> list[tuple[str, str]]:
    """(version, pocket) of each line of `apt-cache madison` for `package`:
    ``pkg | 6.1.177-1 | http://… bookworm-security/main amd64 Packages``."""
    rows = []
    for line in text.splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) == 3 and fields[0] == package:
            where = fields[2].split()
            pocket = where[1].split("/")[0] if len(where) > 1 else ""
            rows.append((fields[1], pocket))
    return rows


def ordered(kernels: list[Packaged]) -> list[Packaged]:
    """Oldest build first, in Debian's version order."""

    def order(left: Packaged, right: Packaged) -> int:
        return compare_versions(left.version, right.version)

    return sorted(kernels, key=functools.cmp_to_key(order))


def list_served(apt: AptSuite, flavour: str) -> list[Packaged]:
    """Every kernel build of `flavour` the suite's lists hold, oldest first (an ABI served
    in several versions counts once, with its newest)."""
    search = apt.run("apt-cache", "search", "--names-only", rf"^linux-image-[0-9].*-{flavour}")
    packages = abi_packages(search, flavour)
    text = apt.run("apt-cache", "madison", *packages.values()) if packages else ""
    kernels = []
    for abi, package in packages.items():
        rows = madison(text, package)
        if rows:
            version, pocket = rows[0]  # madison lists the newest first
            kernels.append(Packaged(package, abi, version, pocket))
    return ordered(kernels)


def served(suite: str, flavour: str, status: Status) -> tuple[list[Packaged], str]:
    """:func:`list_served` on the suite's lists with its security pocket (refreshed when
    old), and the suite's own branch: the one its flavour metapackage follows."""
    apt = AptSuite(suite, security=True)
    with locked(apt.root / "lock"):
        apt.refresh(status)
        status(f"listing the linux-image-*-{flavour} packages of {suite}")
        return list_served(apt, flavour), branch_of(apt.newest(f"linux-image-{flavour}"))


def series(kernels: list[Packaged], branch: str) -> list[Packaged]:
    """The builds of one upstream branch (``6.1``), in order."""
    return [kernel for kernel in kernels if kernel.branch == branch]


def find(kernels: list[Packaged], wanted: str, label: str) -> Packaged:
    """A build named by the user: its ABI (``6.1.0-47``), Debian version (``6.1.170-3``),
    package name, or upstream release (``6.1.170``, when one build carries it)."""
    checks: list[Callable[[Packaged], bool]] = [
        lambda k: wanted in (k.abi, k.version, k.package),
        lambda k: k.upstream == wanted,
    ]
    for check in checks:
        hits = [kernel for kernel in kernels if check(kernel)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            names = ", ".join(f"{k.abi} ({k.version})" for k in hits)
            raise KernelsError(f"--{label} {wanted} names several builds: {names}; give the ABI")
    served_here = ", ".join(f"{k.abi} ({k.version})" for k in kernels) or "none"
    raise KernelsError(f"--{label} {wanted}: no such packaged kernel; served: {served_here}")


def branch_of(text: str) -> str:
    """``6.1`` of a version, ABI or release string."""
    return ".".join(str(part) for part in version_tuple(text)[:2])
