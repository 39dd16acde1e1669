# SPDX-License-Identifier: GPL-2.0-only
"""Where a test's seconds go, per kind of test: the table `scripts/bench-vm` prints.

A guest's phase log (:mod:`kernels.vm.phases`) has one line per test: its wall time, pytest's
set-up/call/teardown durations, the CPU it and its children burnt, and the kinds of work the
library counted inside it (:mod:`netregress.spans`). Averaged per kind of test (our engine's
corpus, the cases' scripts, the kernel's corpus, Python cases), this says whether a guest's
3 s per test are set-up, tcpdump, the engine's own work or waiting, which is what decides how
to make a guest faster.

The engine's own phases (``engine:…``, measured inside its process) are part of
``engine-run`` and are shown under it; ``engine:shell`` (init scripts and commands run through
``/bin/sh``) is part of the engine phases above it. Every other kind is counted where the
library does that work once, so they do not nest; what none covers is the last row.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from packetdrill.engine_process import ENGINE_CPU

# The kinds of work a test's protocol counts directly (the others are inside these).
OUTER = ("namespaces", "sysctls", "topology", "commands", "tcpdump-start", "tcpdump-stop",
         "pcap-parse", "engine-start", "engine-run")  # fmt: skip


@dataclass
class Kind:
    """The tests of one kind: their figures summed, to be averaged per test."""

    name: str
    tests: int = 0
    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, item: dict[str, object]) -> None:
        self.tests += 1
        for key in ("wall", "setup", "call", "teardown", "cpu", "children_cpu"):
            value = item.get(key)
            if isinstance(value, int | float):
                self.sums[key] += value
        spans = item.get("spans")
        if isinstance(spans, dict):
            for kind, seconds in spans.items():
                if isinstance(seconds, int | float):
                    self.sums[f"span:{kind}"] += seconds

    def mean(self, key: str) -> float:
        return self.sums.get(key, 0.0) / self.tests if self.tests else 0.0


def kind_of(nodeid: str) -> str:
    """The kind of test a node id names (by where its file lives)."""
    path = nodeid.split("::", 1)[0]
    if path.endswith(".pkt"):
        if path.startswith("tests/packetdrill/"):
            return "our engine's .pkt"
        if path.startswith("tests/cases/"):
            return "cases' .pkt"
        return "kernel corpus .pkt"
    if path.startswith("tests/cases/"):
        return "Python case"
    return "other"


def by_kind(entries: list[dict[str, object]]) -> list[Kind]:
    kinds: dict[str, Kind] = {}
    for entry in entries:
        name = kind_of(str(entry.get("nodeid", "")))
        kinds.setdefault(name, Kind(name)).add(entry)
    return sorted(kinds.values(), key=lambda kind: -kind.tests)


def rows(kinds: list[Kind]) -> list[tuple[str, list[float]]]:
    """Mean seconds per test, one row per figure, one value per kind."""
    spans = sorted({key[5:] for kind in kinds for key in kind.sums if key.startswith("span:")})
    spans = [name for name in spans if name != ENGINE_CPU]
    outer = [name for name in OUTER if name in spans]
    inner = [name for name in spans if name not in OUTER]
    table: list[tuple[str, list[float]]] = [
        ("wall per test", [kind.mean("wall") for kind in kinds]),
        ("  pytest set-up", [kind.mean("setup") for kind in kinds]),
        ("  pytest call", [kind.mean("call") for kind in kinds]),
        ("  pytest teardown", [kind.mean("teardown") for kind in kinds]),
        ("  pytest's own (reports, hooks)", [
            kind.mean("wall") - kind.mean("setup") - kind.mean("call") - kind.mean("teardown")
            for kind in kinds
        ]),
        ("CPU: pytest's process", [kind.mean("cpu") for kind in kinds]),
        ("CPU: its children (ended)", [kind.mean("children_cpu") for kind in kinds]),
        ("CPU: the engine's forked runs", [kind.mean(f"span:{ENGINE_CPU}") for kind in kinds]),
    ]  # fmt: skip
    for name in outer:
        table.append((f"{name}", [kind.mean(f"span:{name}") for kind in kinds]))
        if name == "engine-run":
            table += [(f"  {sub}", [kind.mean(f"span:{sub}") for kind in kinds]) for sub in inner]
    table.append(("rest of set-up + call + teardown", [
        kind.mean("setup") + kind.mean("call") + kind.mean("teardown")
        - sum(kind.mean(f"span:{name}") for name in outer)
        for kind in kinds
    ]))  # fmt: skip
    return table


def render(entries: list[dict[str, object]]) -> str:
    """The table: seconds per test by kind of test, two decimals."""
    kinds = by_kind(entries)
    if not kinds:
        return "  (no per-test lines in the phase log)"
    table = rows(kinds)
    width = max(len(label) for label, _ in table)
    head = "".join(f" {f'{kind.name} ({kind.tests})':>24}" for kind in kinds)
    lines = [f"  {'seconds per test':{width}}{head}"]
    for label, values in table:
        lines.append(f"  {label:{width}}" + "".join(f" {value:>24.2f}" for value in values))
    return "\n".join(lines)
