# SPDX-License-Identifier: GPL-2.0-only
"""Benchmark: build and teardown time of every shipped topology (scripts/bench-topology).

Speed is a feature we measure here, never with a timed assertion in a test. Shapes the
running kernel cannot build (ipip on a kernel without it) are reported as skipped.
"""

import argparse
import statistics
import time
from collections.abc import Callable

from netregress.errors import run_cli

from . import features
from .errors import FeatureMissing
from .topology import Topology, build, shapes

SHAPES: dict[str, Callable[[], Topology]] = {
    "pair": shapes.pair,
    "bridged(3)": lambda: shapes.bridged(3),
    "ipip_multihomed": shapes.ipip_multihomed,
    "flannel_vxlan": shapes.flannel_vxlan,
}


def measure(make: Callable[[], Topology], runs: int) -> tuple[list[float], list[float]]:
    builds, teardowns = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        net = build(make())
        t1 = time.perf_counter()
        net.close()
        builds.append(t1 - t0)
        teardowns.append(time.perf_counter() - t1)
    return builds, teardowns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-topology", description=__doc__)
    parser.add_argument("--runs", type=int, default=10, help="runs per shape (default 10)")
    args = parser.parse_args(argv)
    return run_cli("bench-topology", lambda: bench(args.runs))


def bench(runs: int) -> int:
    """Print the table: build and teardown times per shape."""
    for feature in ("veth", "bridge", "vxlan", "ipip"):
        features.probe(feature)  # probe once up front so it is not in the first timing
    print(
        f"{'topology':18} {'hosts':>5} {'build ms (median/max)':>22} "
        f"{'teardown ms (median/max)':>25}"
    )
    for name, make in SHAPES.items():
        hosts = len(make().hosts)
        try:
            builds, teardowns = measure(make, runs)
        except FeatureMissing as exc:
            print(f"{name:18} {hosts:>5}   skipped: {exc}")
            continue
        print(
            f"{name:18} {hosts:>5} {statistics.median(builds) * 1e3:>12.1f} / "
            f"{max(builds) * 1e3:<7.1f} {statistics.median(teardowns) * 1e3:>14.1f} / "
            f"{max(teardowns) * 1e3:<7.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
