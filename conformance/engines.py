# SPDX-License-Identifier: GPL-2.0-only
"""The two sides being compared: the builtin engine, and a reference (a binary, or the runs
recorded in a saved JSON for machines that have no binary).

Both live engines run each job through :func:`packetdrill.backend.run_isolated`: a child
process in its own anonymous network namespace (``unshare``), started from the script's folder.
Anonymous namespaces have no name to collide or leak, and vanish with their last process, which
dies with us (``PR_SET_PDEATHSIG``) — so a parallel run, a crash or Ctrl-C leaves nothing behind.
"""

from dataclasses import dataclass, field
from typing import Protocol

from packetdrill.backend import Backend, run_isolated

from .corpus import Job
from .outcome import SKIP, Outcome, from_result


class Engine(Protocol):
    name: str
    live: bool  # False: results are recorded, re-running cannot change them

    def run(self, job: Job) -> Outcome: ...


@dataclass
class LiveEngine:
    """``builtin``, or ``reference`` with the binary's path; ``skipped`` maps job keys to
    the reason they are not run (from :func:`skip_reasons`)."""

    name: str
    backend: Backend
    timeout: float
    skipped: dict[str, str] = field(default_factory=dict)
    live: bool = True

    def run(self, job: Job) -> Outcome:
        if job.key in self.skipped:
            return Outcome(SKIP, self.skipped[job.key])
        return from_result(
            run_isolated(self.backend, str(job.script), job.options, timeout=self.timeout)
        )


@dataclass
class RecordedEngine:
    """The reference side of ``--against``: outcomes keyed by :attr:`Job.key`."""

    outcomes: dict[str, Outcome]
    name: str = "reference"
    live: bool = False

    def run(self, job: Job) -> Outcome:
        return self.outcomes[job.key]


def skip_reasons(jobs: list[Job]) -> dict[str, str]:
    """Our corpus's ``skip-if-kernel-has`` markers, checked with the library's kernel probes,
    and the scripts the kernel's runner itself runs no packetdrill for.

    Called once, before the worker threads start: a probe creates a namespace through
    pyroute2, which forks, and forking a process whose threads hold locks is unsafe."""
    from netns import features

    reasons = {}
    for job in jobs:
        if job.not_run:
            reasons[job.key] = f"the kernel's runner {job.not_run}"
            continue
        present = [name for name in job.skip_if_has if features.has(name)]
        if present:
            reasons[job.key] = f"kernel has {', '.join(present)}"
    return reasons
