# SPDX-License-Identifier: GPL-2.0-only
"""What one pytest session decided, for every netregress plugin to read from ``config.stash``.

The plugins are separate modules (namespaces, packetdrill scripts, the kernel matrix) but
must agree on where the tests run. The kernels plugin decides that from ``--kernel``; the
others read the typed decision here instead of reaching into its command-line options.
"""

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class VmKernel:
    """The tests of this session run inside a VM booting this kernel, not on this host."""

    name: str


VM_KERNEL = pytest.StashKey[VmKernel]()


def vm_kernel(config: pytest.Config) -> VmKernel | None:
    """The VM kernel this session sends its tests to, or None: they run on this kernel."""
    return config.stash.get(VM_KERNEL, None)
