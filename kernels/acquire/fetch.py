# SPDX-License-Identifier: GPL-2.0-only
"""Turning a catalog entry into a bootable kernel: the one place that dispatches on its kind."""

import os
from pathlib import Path

from kernels.acquire.catalog import (
    DebianKernel,
    KernelSpec,
    PathKernel,
    RunningKernel,
    SourceKernel,
)
from kernels.acquire.debian import fetch_debian
from kernels.acquire.kernel import BootableKernel, build_version, bzimage_banner, recorded_git
from kernels.errors import KernelsError
from kernels.progress import Status


def _modules_for(spec: PathKernel, release: str) -> Path:
    """The spec's modules dir, or `lib/modules/<release>` found walking up from the image."""
    if spec.modules is not None:
        candidates = [spec.modules, spec.modules / "lib/modules" / release]
    else:
        candidates = [p / "lib/modules" / release for p in spec.image.resolve().parents]
    for candidate in candidates:
        if (candidate / "modules.dep").is_file() and candidate.name == release:
            return candidate.resolve()
    where = spec.modules or f"a lib/modules/{release} above {spec.image}"
    raise KernelsError(
        f"kernel {spec.name}: no modules for {release} in {where} "
        "(run `make modules_install INSTALL_MOD_PATH=...` and set `modules`)"
    )


def _path_kernel(spec: PathKernel) -> BootableKernel:
    banner = bzimage_banner(spec.image)
    release = banner.split()[0]
    return BootableKernel(
        name=spec.name,
        release=release,
        version=build_version(banner, release),
        image=spec.image.resolve(),
        modules=_modules_for(spec, release),
        git=recorded_git(spec.image.resolve()),
    )


def _running(spec: RunningKernel) -> BootableKernel:
    release = os.uname().release
    banner = Path("/proc/version").read_text()
    return BootableKernel(name=spec.name, release=release, version=build_version(banner, release))


def fetch(spec: KernelSpec, status: Status) -> BootableKernel:
    """The bootable kernel for `spec`, downloading into the cache if needed."""
    match spec:
        case DebianKernel():
            return fetch_debian(spec, status)
        case PathKernel():
            return _path_kernel(spec)
        case RunningKernel():
            return _running(spec)
        case SourceKernel():
            # Imported here: the build machinery is only needed for source kernels.
            from kernels.acquire.from_source.matrix_source import fetch_source

            return fetch_source(spec, status)
