# SPDX-License-Identifier: GPL-2.0-only
"""The matrix for people and tools: the table (terminal, Markdown, JSON), matrix.html, KTAP, KCIDB,
JUnit, the result directory's record and merging shard directories.
"""
