# SPDX-License-Identifier: GPL-2.0-only
"""Using kernels built from source to judge a test: the re-introduced-bug check, `git bisect run`
with build + boot + test, the bisect demo.
"""
