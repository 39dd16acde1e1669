# SPDX-License-Identifier: GPL-2.0-only
"""The netregress summary at the end of a run: what a newcomer reads to learn the verdict.

Why not pytest's own lines: a failure must say why in its own line (the first line of its
reason, with nothing cut), thirty cases skipped for one missing kernel feature are one fact,
not thirty, and the strict xfails of the broken variants are proofs that each case's oracle
can fail, not problems: a newcomer reading "40 xfailed" counts 40 problems. So skips are
grouped by reason, and the broken variants that failed as they must are one line (netns/variants.py
marks their reports).
"""

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from netregress.session import ORACLE_PROVED

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
# --summary=problems: no passes, no XFAILED lines (only the count of the proofs)
PROBLEMS = ("failed", "error", "xpassed", "skipped")
# Per-case lines first, the failures last, next to pytest's own short summary and count line.
_ORDER = ("passed", "xfailed", "xpassed", "error", "failed")
_WIDTH = 90  # the node id column, at most


@dataclass(frozen=True)
class Row:
    """One test's verdict: its node id as a user types it, outcome, and reason (a skip's or
    an xfail's; a failure's first line); `proof`: a broken variant that failed as it must."""

    nodeid: str
    outcome: str
    reason: str = ""
    proof: bool = False


def first_line(report: pytest.TestReport) -> str:
    """The first line of why a test failed: the exception's message (pytest's "crash" line),
    or the text a plugin gave as the whole report (a packetdrill script's diagnostic)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(crash.message if crash is not None else report.longrepr or "")
    return text.strip().partition("\n")[0]


def _reason(report: pytest.TestReport, outcome: str) -> str:
    if outcome == "skipped" and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    if outcome == "xfailed":
        return str(getattr(report, "wasxfail", ""))
    return first_line(report) if outcome in ("failed", "error") else ""


def _reports(
    stats: dict[str, list[Any]], outcomes: Iterable[str]
) -> Iterator[tuple[str, pytest.TestReport]]:
    """(outcome, report) of each test report of these outcomes; a pass counts from its call
    phase only."""
    for outcome in outcomes:
        for report in stats.get(outcome, []):
            if isinstance(report, pytest.TestReport) and (
                outcome != "passed" or report.when == "call"
            ):
                yield outcome, report


def rows(stats: dict[str, list[Any]], outcomes: Iterable[str]) -> list[tuple[str, str, str]]:
    """(node id, outcome, reason) per report: what --record-skips and --record-verdicts
    write, keyed by pytest's node id."""
    return [(r.nodeid, outcome, _reason(r, outcome)) for outcome, r in _reports(stats, outcomes)]


def shown_nodeid(config: pytest.Config, report: pytest.TestReport) -> str:
    """The node id relative to where the user typed the command, as pytest prints it; for a
    file named on the command line outside the rootdir, whose node id pytest leaves without a
    path (``::ipv4``), the file's own path."""
    path, sep, rest = report.nodeid.partition("::")
    where = config.rootpath / (path or report.location[0])
    return os.path.relpath(where, config.invocation_params.dir) + sep + rest


def summary_rows(
    config: pytest.Config, stats: dict[str, list[Any]], outcomes: Iterable[str]
) -> list[Row]:
    """The summary's rows: node ids as the user types them, broken variants' proofs marked."""
    return [
        Row(
            shown_nodeid(config, report),
            outcome,
            _reason(report, outcome),
            proof=outcome == "xfailed" and bool(getattr(report, ORACLE_PROVED, False)),
        )
        for outcome, report in _reports(stats, outcomes)
    ]


def lines(found: list[Row]) -> list[str]:
    """The summary's text: one line per case (outcome, node id, reason), skips as one line per
    reason with its count and the files it skipped in, one line for the broken variants'
    proofs, the failures last."""
    cases = sorted(
        (r for r in found if r.outcome in _ORDER and not r.proof),
        key=lambda r: (_ORDER.index(r.outcome), r.nodeid),
    )
    width = min(max((len(r.nodeid) for r in cases), default=0), _WIDTH)
    text = [f"{r.outcome.upper():8} {r.nodeid:{width}} {r.reason}".rstrip() for r in cases]
    failing = sum(r.outcome in ("error", "failed") for r in cases)
    head, failures = text[: len(text) - failing], text[len(text) - failing :]
    head += _skips([r for r in found if r.outcome == "skipped"])
    proofs = sum(r.proof for r in found)
    if proofs:
        head.append(
            f"{proofs} broken variant{'s' if proofs > 1 else ''} failed as "
            f"{'they' if proofs > 1 else 'it'} must, proving {'their' if proofs > 1 else 'its'} "
            "case's check can fail (counted as xfailed; not a problem)"
        )
    return head + failures


def _skips(skipped: list[Row]) -> list[str]:
    """One line per reason, most frequent first, then how many skipped in which file."""
    files: dict[str, Counter[str]] = defaultdict(Counter)
    for row in skipped:
        files[row.reason][row.nodeid.partition("::")[0]] += 1
    text: list[str] = []
    for reason, where in sorted(files.items(), key=lambda pair: (-pair[1].total(), pair[0])):
        text.append(f"SKIPPED  {where.total():3} x {reason}")
        text += [f"{'':14}{count:3} in {file}" for file, count in sorted(where.items())]
    return text


def artifacts_line(here: Path, html: str | None, root: Path | None) -> str | None:
    """The run's last line: the page to open, and where failures kept their pcaps (None: there
    is neither)."""
    parts = [f"open {_relative(here, Path(html))}"] if html else []
    if root is not None and root.is_dir() and any(root.iterdir()):
        parts.append(f"pcaps and counters of the failures: {_relative(here, root)}/")
    return f"netregress: {'; '.join(parts)}" if parts else None


def _relative(here: Path, path: Path) -> str:
    """`path` as typed from `here`: relative below it, else absolute."""
    full = Path(os.path.normpath(here / path))
    return str(full.relative_to(here)) if full.is_relative_to(here) else str(full)
