"""The command lines over the kernel packages: `scripts/matrix` (and its merge/ci/export
subcommands), `scripts/soak`, `scripts/bench-vm`.
"""
