# SPDX-License-Identifier: GPL-2.0-only
"""Running every job under every engine in parallel, then each disagreement alone again.

Why re-run alone: on a loaded machine a timing check can fail once (the kernel or our injector
was late); a disagreement that does not come back when nothing else runs is a flake, not a
conformance bug. Only disagreements that persist in every re-run count as reproducible.
"""

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from .corpus import Job
from .engines import Engine
from .outcome import Outcome
from .progress import Progress

Runs = dict[str, dict[str, Outcome]]  # job key → engine name → outcome
Agrees = Callable[[Job, Outcome, Outcome], bool]


def run_all(
    jobs: Sequence[Job], engines: Sequence[Engine], workers: int, progress: Progress
) -> Runs:
    """Every (job, live engine) pair on ``workers`` threads; recorded engines answer at once."""
    runs: Runs = {job.key: {} for job in jobs}
    for engine in engines:
        if not engine.live:
            for job in jobs:
                runs[job.key][engine.name] = engine.run(job)
    tasks = [(job, engine) for job in jobs for engine in engines if engine.live]
    # No `with`: its exit waits for running tasks, and on Ctrl-C we must not wait 180 s.
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    futures = {pool.submit(engine.run, job): (job, engine) for job, engine in tasks}
    try:
        for future in as_completed(futures):
            job, engine = futures[future]
            outcome = future.result()
            runs[job.key][engine.name] = outcome
            progress.step(f"{engine.name:<9} {job.key}", outcome.verdict, outcome.seconds)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    progress.finish()
    return runs


@dataclass
class Rerun:
    """Verdicts of the re-runs per engine; ``agreed_on`` is the re-run (1-based) where the
    engines agreed again, ``None`` when they disagreed every time (reproducible)."""

    verdicts: dict[str, list[str]]
    agreed_on: int | None = None
    settled: dict[str, Outcome] | None = None  # the outcomes of the re-run that agreed

    @property
    def reproducible(self) -> bool:
        return self.agreed_on is None


def rerun_alone(
    jobs: Sequence[Job],
    engines: Sequence[Engine],
    runs: Runs,
    times: int,
    agrees: Agrees,
    progress: Progress,
) -> dict[str, Rerun]:
    """Re-run each disagreeing job up to ``times`` times, one run at a time, until the
    engines agree (a flake) or the re-runs are used up (reproducible)."""
    reruns: dict[str, Rerun] = {}
    for job in jobs:
        first = runs[job.key]
        if agrees(job, first["builtin"], first["reference"]):
            continue
        rerun = Rerun({engine.name: [] for engine in engines})
        for attempt in range(1, times + 1):
            latest = dict(first)
            for engine in engines:
                if engine.live:
                    latest[engine.name] = engine.run(job)
                    progress.note(
                        f"re-run {attempt}/{times} {engine.name:<9} {job.key}: "
                        f"{latest[engine.name].verdict}"
                    )
                rerun.verdicts[engine.name].append(latest[engine.name].verdict)
            if agrees(job, latest["builtin"], latest["reference"]):
                rerun.agreed_on, rerun.settled = attempt, latest
                break
        reruns[job.key] = rerun
    return reruns
