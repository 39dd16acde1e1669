# SPDX-License-Identifier: GPL-2.0-only
"""Splitting one matrix run over N machines: which kernels, and which of their tests, shard I runs.

Why a pure function of the kernel list and the collection order: every CI runner computes its
own slice without talking to the others, so the slices must come out the same everywhere.
Whole kernels go to shards first (a kernel's boot and fetch are paid once); only when there
are more shards than kernels is a kernel's test list dealt out round-robin over several
shards, so slow and fast tests of one file spread evenly.
"""

import re
from dataclasses import dataclass

from kernels.errors import KernelsError

_SHARD = re.compile(r"^(\d+)/(\d+)$")


@dataclass(frozen=True)
class Piece:
    """Kernel `kernel`'s share of a shard: every `count`-th test starting at `index` (0-based);
    `count == 1` is the whole kernel."""

    kernel: str
    index: int = 0
    count: int = 1

    @property
    def label(self) -> str:
        whole = self.count == 1
        return self.kernel if whole else f"{self.kernel} slice {self.index + 1}/{self.count}"


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1 <= I <= N) from the command line, or a clear error."""
    match = _SHARD.match(text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise KernelsError(f"--shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return int(match.group(1)), int(match.group(2))


def plan(kernels: list[str], shards: int) -> list[list[Piece]]:
    """The pieces of each shard (index 0 is shard 1/N).

    N <= kernels: kernel j goes to shard j mod N, whole. N > kernels: kernel j gets
    N // K shards (one more for the first N mod K kernels), consecutive, each a test slice.
    """
    if shards <= len(kernels):
        out: list[list[Piece]] = [[] for _ in range(shards)]
        for position, kernel in enumerate(kernels):
            out[position % shards].append(Piece(kernel))
        return out
    base, extra = divmod(shards, len(kernels))
    return [
        [Piece(kernel, index, count)]
        for position, kernel in enumerate(kernels)
        for count in [base + (1 if position < extra else 0)]
        for index in range(count)
    ]


def slice_tests(collected: list[str], piece: Piece) -> list[str]:
    """The node ids this piece runs, in collection order."""
    return collected[piece.index :: piece.count]
