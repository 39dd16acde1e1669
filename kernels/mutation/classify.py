# SPDX-License-Identifier: GPL-2.0-only
"""A mutant's verdict: killed, crashed, survived or stillborn, judged against the control.

Why against the control and not against "all green": a mutant is caught only by a difference
the mutation made. A test that fails on the mutant but also on the unpatched build says
nothing about the mutant, and a control that is not clean stops the campaign instead of
quietly lowering the bar (:func:`control_problems`).

How a test kills: it fails where the control did not, or it is a strict-xfail broken variant
(the proof that an oracle can fail) that passes where the control's failed, because the
mutation broke the very thing the variant breaks on purpose.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kernels.matrix.results import UNEXPECTED, TestResult
from kernels.matrix.results import Outcome as Cell

Outcome = Literal["killed", "crashed", "survived", "stillborn"]
COUNTED: frozenset[Outcome] = frozenset({"killed", "crashed", "survived"})
XPASS_STRICT = "[XPASS(strict)]"


@dataclass(frozen=True)
class Kill:
    """One test that told the mutant apart from the control, and how."""

    nodeid: str
    how: Literal["failed", "broken variant passed"]
    message: str


@dataclass(frozen=True)
class Verdict:
    """`reason`: why it crashed or was stillborn; `excerpt`: the console or build log tail."""

    outcome: Outcome
    kills: tuple[Kill, ...] = ()
    reason: str = ""
    excerpt: str = ""
    changed: tuple[str, ...] = field(default=())  # other differences, shown but never counted


def control_problems(results: Sequence[TestResult], problem: str | None) -> list[str]:
    """Why a control run cannot serve as the baseline (empty when it can): a failed or crashed
    test, a kernel problem, or nothing run at all."""
    found = [f"{r.nodeid}: {r.outcome}: {r.message}" for r in results if r.outcome in UNEXPECTED]
    if problem is not None:
        found.append(f"kernel problem: {problem}")
    if not any(r.outcome in (Cell.PASS, Cell.XFAIL) for r in results):
        found.append("no selected test passed or xfailed on the control")
    return found


def _kill(result: TestResult) -> Kill:
    how: Literal["failed", "broken variant passed"] = (
        "broken variant passed" if XPASS_STRICT in result.message else "failed"
    )
    return Kill(result.nodeid, how, result.message)


def classify(
    control: Iterable[TestResult],
    mutant: Iterable[TestResult],
    crash: tuple[str, str] | None = None,
) -> Verdict:
    """The verdict of one mutant run. `crash` is the kernel problem (reason, console excerpt)
    when the guest panicked, oopsed or hung; it counts as caught, reported apart."""
    baseline = {r.nodeid: r for r in control}
    kills: list[Kill] = []
    changed: list[str] = []
    crashed_test: TestResult | None = None
    for result in mutant:
        before = baseline.get(result.nodeid)
        if result.outcome == Cell.CRASH:
            crashed_test = result
        elif before is None:
            changed.append(f"{result.nodeid}: {result.outcome} (not run on the control)")
        elif result.outcome == Cell.FAIL and before.outcome != Cell.FAIL:
            kills.append(_kill(result))
        elif result.outcome != before.outcome:
            changed.append(f"{result.nodeid}: {before.outcome} → {result.outcome}")
    if crash is not None or crashed_test is not None:
        reason, excerpt = crash or ("", "")
        if crashed_test is not None:
            reason = reason or crashed_test.message
            excerpt = excerpt or crashed_test.details
            reason = f"{reason} (during {crashed_test.nodeid})"
        return Verdict("crashed", tuple(kills), reason, excerpt, tuple(changed))
    return Verdict("killed" if kills else "survived", tuple(kills), changed=tuple(changed))


def confirmed(
    verdict: Verdict, again: Iterable[TestResult], on_control: Iterable[TestResult]
) -> Verdict:
    """Keep only the kills that a second run of the killing tests repeats on the mutant while
    the control passes them in a run of its own just after: a kill must be the mutation's
    doing, not one unlucky run nor a test this machine cannot pass right now (a loaded host
    fails timing checks on any kernel). Kills that did not hold are listed as changes, and a
    mutant left with none survived."""
    repeated = {r.nodeid for r in again if r.outcome == Cell.FAIL}
    control_failed = {r.nodeid for r in on_control if r.outcome in UNEXPECTED}
    kept = tuple(
        k for k in verdict.kills if k.nodeid in repeated and k.nodeid not in control_failed
    )
    lost = tuple(
        f"{k.nodeid}: failed once, passed its re-run"
        if k.nodeid not in repeated
        else f"{k.nodeid}: failed on the control too when run again (not the mutation's doing)"
        for k in verdict.kills
        if k not in kept
    )
    outcome: Outcome = verdict.outcome
    if outcome == "killed" and not kept:
        outcome = "survived"
    return Verdict(outcome, kept, verdict.reason, verdict.excerpt, verdict.changed + lost)
