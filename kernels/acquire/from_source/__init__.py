# SPDX-License-Identifier: GPL-2.0-only
"""Building kernels from source: a Debian `linux-source-X.Y` package or a user's git tree.

Data flows one way: source (extracted into the cache, or the user's tree, never written to)
→ patches (reversible, cache trees only) → config (defconfig + kvm_guest + our fragment,
verified) → make (out of tree, incremental, niced) → install (bzImage + lib/modules/<release>,
the layout the matrix boots as a `path` kernel).
"""
