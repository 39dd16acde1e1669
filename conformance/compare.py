# SPDX-License-Identifier: GPL-2.0-only
"""Agreement between the builtin engine and the reference, and what a disagreement is.

The verdict is PASS or not (FAIL and TIMEOUT are both failures, as for upstream's runner);
a SKIP on either side is not compared, nor is a reference that CRASHed (the binary died on
a signal, e.g. an assertion on an older kernel: it has no verdict to compare with). In our
corpus a script may carry an expect-fail marker: then both engines must also fail *with a
message the marker matches*, or the marker only holds for one of them — a disagreement too,
because pytest would pass under one engine only.
"""

import re
import statistics
from dataclasses import dataclass, field

from .corpus import Job
from .outcome import CRASH, SKIP, Outcome, cause
from .runner import Rerun, Runs


def marker_matches(job: Job, outcome: Outcome) -> bool | None:
    """Whether the expect-fail marker holds for this outcome; None without a marker."""
    if job.expect_fail is None:
        return None
    return not outcome.passed and re.search(job.expect_fail, outcome.message) is not None


def compared(builtin: Outcome, reference: Outcome) -> bool:
    return SKIP not in (builtin.verdict, reference.verdict) and reference.verdict != CRASH


def agrees(job: Job, builtin: Outcome, reference: Outcome) -> bool:
    if not compared(builtin, reference):
        return True
    if builtin.passed != reference.passed:
        return False
    return marker_matches(job, builtin) == marker_matches(job, reference)


def kind_of(job: Job, builtin: Outcome, reference: Outcome) -> str:
    """How a disagreement looks: the one that matters most is a false pass."""
    if builtin.passed and not reference.passed:
        return "false pass"
    if reference.passed and not builtin.passed:
        return "false fail"
    only = "builtin" if marker_matches(job, builtin) else "reference"
    return f"expect-fail marker matches only {only}"


@dataclass
class Group:
    kind: str
    cause: str
    jobs: list[str] = field(default_factory=list)


@dataclass
class Summary:
    runs: int
    compared: int
    passed: dict[str, int]
    agreed: int
    disagreed_first: int
    reproducible: int
    flakes: int
    false_passes: list[str]
    groups: list[Group]
    median_wall_ratio: float | None

    @property
    def agreement(self) -> float:
        """Agreement after re-runs: only reproducible disagreements count against it."""
        if not self.compared:
            return 100.0
        return 100.0 * (self.compared - self.reproducible) / self.compared


def summarize(jobs: list[Job], runs: Runs, reruns: dict[str, Rerun]) -> Summary:
    with_reference = [job for job in jobs if "reference" in runs[job.key]]
    passed = {
        name: sum(runs[job.key][name].passed for job in jobs if name in runs[job.key])
        for name in ("builtin", "reference")
    }
    pairs = [(job, runs[job.key]["builtin"], runs[job.key]["reference"]) for job in with_reference]
    pairs = [(job, b, r) for job, b, r in pairs if compared(b, r)]
    disagreeing = [(job, b, r) for job, b, r in pairs if not agrees(job, b, r)]
    lasting = [(job, b, r) for job, b, r in disagreeing if reruns[job.key].reproducible]
    groups: dict[tuple[str, str], Group] = {}
    for job, b, r in lasting:
        kind = kind_of(job, b, r)
        reason = (
            cause(r)
            if kind == "false pass"
            else cause(b)
            if kind == "false fail"
            else (f"builtin: {cause(b)} | reference: {cause(r)}")
        )
        groups.setdefault((kind, reason), Group(kind, reason)).jobs.append(job.key)
    ratios = [b.seconds / r.seconds for _, b, r in pairs if b.seconds > 0 and r.seconds > 0]
    return Summary(
        runs=len(jobs),
        compared=len(pairs),
        passed=passed,
        agreed=len(pairs) - len(disagreeing),
        disagreed_first=len(disagreeing),
        reproducible=len(lasting),
        flakes=len(disagreeing) - len(lasting),
        false_passes=[job.key for job, b, r in lasting if kind_of(job, b, r) == "false pass"],
        groups=sorted(groups.values(), key=lambda g: (g.kind != "false pass", -len(g.jobs))),
        median_wall_ratio=round(statistics.median(ratios), 3) if ratios else None,
    )
