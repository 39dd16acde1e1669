# SPDX-License-Identifier: GPL-2.0-only
"""Getting kernels to boot: the catalog (matrix.toml), Debian packages, the running kernel, and
kernels built from source (`from_source`).
"""
