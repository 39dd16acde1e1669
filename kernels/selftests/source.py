# SPDX-License-Identifier: GPL-2.0-only
"""Where the kernel's network shell selftests come from (``tools/testing/selftests/net`` and
its ``forwarding/``): the kernel's own source tree, Debian's ``linux-source-<version>`` of the
kernel's suite, the newest one where that has none, or a kernel tree the user names; never
from our repository (kernels/acquire/linux_source.py says why and how).

Why more than the net folder is extracted: the scripts' C helpers are built from the same
source with its own user-space headers (``make headers_install``), which needs the top
Makefile, scripts/, include/, arch/x86/ and tools/ (~190 MB of the ~1.8 GB tree); the build
is kernels/selftests/build.py's.
"""

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kernels.acquire import linux_source
from kernels.acquire.catalog import KernelSpec
from kernels.acquire.linux_source import Part, Tree, cached_origin, resolve_auto, tree_version
from kernels.errors import KernelsError
from kernels.progress import Status
from kernels.selftests.build import build_helpers

NET_DIR = PurePosixPath("tools/testing/selftests/net")
OPTION = "--kernel-selftests"  # the pytest option (kernels/selftests/pytest_plugin.py)
WHY_OPTION = "--kernel-selftests-why"  # why the host chose a guest's tree (not for users)
_TOP_FILES = {"Makefile", "Kbuild", "Kconfig"}
_FOLDERS = ("scripts", "include", "usr", "tools", "arch/x86")


def _wanted(inner: PurePosixPath) -> bool:
    """The files the scripts and the build of their helpers need."""
    if str(inner) in _TOP_FILES or inner == PurePosixPath("arch/Kconfig"):
        return True
    return any(inner.is_relative_to(folder) for folder in _FOLDERS)


def _present(top: Path) -> bool:
    """A tree holds the selftests if its net folder has a Makefile (lib.sh came in 6.8)."""
    return (top / NET_DIR / "Makefile").is_file()


PART = Part(
    cache="net-selftests",
    about="network selftests (tools/testing/selftests/net)",
    noun="selftests",
    wanted=_wanted,
    present=_present,
)


@dataclass(frozen=True)
class Selftests:
    """A kernel tree holding the network selftests, where it came from, and its version."""

    top: Path
    origin: str
    version: str

    @property
    def net(self) -> Path:
        return self.top / NET_DIR

    def describe(self) -> str:
        of = f"Linux {self.version} " if self.version else ""
        return f"{of}network selftests from {self.origin} ({self.net})"


def from_directory(path: Path) -> Selftests:
    """A folder the user names: a kernel tree, or its ``tools/testing/selftests/net``."""
    path = path.expanduser().resolve()
    for top in (path, *path.parents[:4]):
        if _present(top) and (top == path or path == top / NET_DIR):
            return Selftests(top, cached_origin(top) or f"directory {path}", tree_version(top))
    raise KernelsError(
        f"{path}: no kernel network selftests here (looked for {NET_DIR}/Makefile): "
        f"name a kernel source tree or its {NET_DIR}"
    )


def _of(tree: Tree) -> Selftests:
    return Selftests(tree.top, tree.origin or f"directory {tree.top}", tree.version)


def for_kernel(spec: KernelSpec | None, status: Status) -> tuple[Selftests, str]:
    """``auto``: the selftests for a kernel of the catalog (None: the running kernel), and why
    these (its own source, its suite's package, or the newest)."""
    tree, why = linux_source.for_kernel(spec, PART, status)
    return _of(tree), why


def guest_args(pytest_args: list[str], spec: KernelSpec, status: Status) -> list[str]:
    """A guest's pytest arguments: ``--kernel-selftests auto`` becomes the tree ``auto`` means
    for `spec`, resolved on the host (kernels/acquire/linux_source.py's resolve_auto), its
    helpers built here too (a guest has no compiler)."""

    def resolve() -> tuple[str, str]:
        chosen, why = for_kernel(spec, status)
        build_helpers(chosen.top, chosen.net, status)
        return str(chosen.top), why

    return resolve_auto(pytest_args, OPTION, WHY_OPTION, resolve)
