# SPDX-License-Identifier: GPL-2.0-only
"""Running the suite on one kernel and planning a run over many: the runner, what a guest streams
back, shards, expectations, CI workflows.
"""
