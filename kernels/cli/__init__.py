# SPDX-License-Identifier: GPL-2.0-only
"""The command lines over the kernel packages: `scripts/matrix` (and its merge/ci/export
subcommands), `scripts/soak`, `scripts/bench-vm`.
"""
