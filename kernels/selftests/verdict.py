# SPDX-License-Identifier: GPL-2.0-only
"""A script run's verdict from its exit code and its sub-tests, with the kernel's known
differences applied per sub-test.

Why per sub-test: a script's exit code is one bit for dozens of checks. A failing check is
judged on its own: the kernel's failure (the script fails and names it), a known difference
of this kernel (an ``expectations.toml`` entry whose test is ``<script's node id>::<sub-test
name>``, with the commit this kernel lacks), or not the kernel's doing (a too-old iproute2,
a link type this kernel was built without: a skip naming it). An entry whose sub-test passes
is an error, as a strict xfail's XPASS is: the kernel has the fix, narrow the entry.
"""

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from kernels.matrix.expectations import Expectation
from kernels.selftests.output import SubResult, Verdict
from kernels.selftests.run import SKIP_EXIT, ScriptRun

_SHOWN = 12  # failed sub-tests named in the one-line message; the rest are counted


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    XFAIL = "xfail"


@dataclass(frozen=True)
class Judgement:
    """The item's outcome and the words its report shows."""

    outcome: Outcome
    message: str


def describe_trouble(line: str, iproute2: str) -> str:
    """A trouble log line (tab-separated: kind, command, detail) in words."""
    kind, _, rest = line.partition("\t")
    command, _, detail = rest.partition("\t")
    if kind == "iproute2":
        return f"iproute2 {iproute2} is too old for the script (`{command}`: {detail})"
    if kind == "link-type":
        link, _, error = detail.partition(": ")
        if "Unknown device type" in error:
            return f"the kernel has no '{link}' link type (`{command}`)"
        return f"the kernel refused a '{link}' link (`{command}`: {error})"
    if kind == "missing":
        return f"'{command}' is not installed or was not built"
    if kind == "protocol":
        return f"the kernel has no {command} (socket(): {detail})"
    return line


def _names(results: list[SubResult]) -> str:
    shown = "; ".join(result.name for result in results[:_SHOWN])
    more = len(results) - _SHOWN
    return shown + (f"; and {more} more" if more > 0 else "")


def judge(
    run: ScriptRun,
    known: Callable[[str], Expectation | None],
    iproute2: str,
    timeout: float | None,
) -> Judgement:
    """The verdict of `run`; `known(name)` is the expectation covering a sub-test, if any."""
    if run.exit_code is None:
        done = f"; {len(run.results)} sub-tests reported before" if run.results else ""
        return Judgement(Outcome.FAIL, f"timed out after {timeout:.0f} s (settings){done}")
    failed = [result for result in run.results if result.verdict == Verdict.FAIL]
    entries = {r.name: entry for r in run.results if (entry := known(r.name)) is not None}
    # A known difference names its sub-test: it wins over a trouble the sub-test inherited.
    expected = [result for result in failed if result.name in entries]
    elsewhere = [r for r in failed if r.blamed_elsewhere and r.name not in entries]
    unknown = [r for r in failed if not r.blamed_elsewhere and r.name not in entries]
    fixed = [r for r in run.results if r.verdict == Verdict.PASS and r.name in entries]
    troubles = sorted({describe_trouble(r.blamed_elsewhere, iproute2) for r in elsewhere})
    if run.exit_code == SKIP_EXIT and not failed:
        return Judgement(Outcome.SKIP, f"the script skips (exit {SKIP_EXIT}): {_last_words(run)}")
    if unknown:
        return Judgement(
            Outcome.FAIL,
            f"{len(unknown)} of {len(run.results)} sub-tests failed: {_names(unknown)}",
        )
    if fixed:
        passed = "; ".join(f"{r.name}: {entries[r.name].why}" for r in fixed)
        return Judgement(
            Outcome.FAIL,
            f"known failures passed (the kernel has the fix, narrow the entry): {passed}",
        )
    if expected:
        reasons = sorted({entries[r.name].why for r in expected})
        also = f"; not the kernel's: {'; '.join(troubles)}" if troubles else ""
        return Judgement(
            Outcome.XFAIL, f"known differences: {_names(expected)}: {'; '.join(reasons)}{also}"
        )
    if elsewhere:
        return Judgement(
            Outcome.SKIP, f"{len(elsewhere)} sub-tests could not be judged: {'; '.join(troubles)}"
        )
    if run.exit_code != 0:
        if run.troubles:
            why = "; ".join(sorted({describe_trouble(line, iproute2) for line in run.troubles}))
            return Judgement(Outcome.SKIP, f"exit {run.exit_code}, not the kernel's: {why}")
        return Judgement(
            Outcome.FAIL, f"exit {run.exit_code} with no failed sub-test: {_last_words(run)}"
        )
    return Judgement(Outcome.PASS, f"{len(run.results)} sub-tests")


def _last_words(run: ScriptRun) -> str:
    """The output's last line that says something (a skip's or an error's reason)."""
    lines = [line.strip() for line in run.output.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(no output)"
