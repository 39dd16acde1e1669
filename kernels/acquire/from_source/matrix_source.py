# SPDX-License-Identifier: GPL-2.0-only
"""The matrix's `kind = "source"` kernels, built on demand (the hook kernels/acquire/fetch.py
calls).

Why a function here and not in fetch.py: building is this package's job; the matrix only
needs "give me a bootable kernel for this tree". Each fetch is an incremental build, so a
tree that did not change costs a make that finds nothing to do. The kernel names the tree's
git checkout (commit, remote, uncommitted changes) as it was when the build started.
"""

from kernels.acquire.catalog import SourceKernel
from kernels.acquire.from_source.builder import BuildRequest, build
from kernels.acquire.from_source.source import git_tree
from kernels.acquire.kernel import BootableKernel, build_version, bzimage_banner
from kernels.progress import Status


def fetch_source(spec: SourceKernel, status: Status) -> BootableKernel:
    """Build `spec.tree` (out of tree, in the cache) and describe the result for the runner."""
    source = git_tree(spec.tree)
    built = build(BuildRequest(source=source, name=spec.name), status)
    return BootableKernel(
        name=spec.name,
        release=built.release,
        version=build_version(bzimage_banner(built.image), built.release),
        image=built.image,
        modules=built.modules,
        git=source.git,
    )
