# SPDX-License-Identifier: GPL-2.0-only
"""matrix.html: the kernel matrix as one static page a kernel engineer clicks through.

Why a page besides matrix.md: a red cell's next question is "what did the kernel do?". Each
cell opens its drill-down (message, failure text, the guest console for a crash, links to the
test's pcaps and counters, time-sequence plots), and a test that passes on one kernel and
fails on another shows both traces aligned with the first divergence highlighted
(:mod:`evidence.tracediff`). Self-contained: inline CSS, SVG and a few lines of JS for the
filter box; drill-downs open through URL fragments (CSS ``:target``), so the page works from
disk or a CI artifact. Rendered with Jinja2 (pytest-html's own template engine).

Written with every result directory (kernels/report/outputs.py lists the formats).
"""

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from evidence.page import evidence_html
from evidence.tracediff import align, describe, first_divergence, read_rows
from kernels.matrix.results import Outcome, TestResult
from kernels.matrix.runner import KernelRun
from kernels.report import grid
from kernels.report.model import Matrix
from kernels.report.record import Record
from netregress.session import folder_name

FILE = "matrix.html"
XPASS = "XPASS"
# The grid's cell words (kernels/report/grid.py) to colour classes, an outcome's class being
# its name; unknown words stay uncoloured.
_CLASS = {grid.WORDS[outcome]: outcome.value for outcome in Outcome} | {
    grid.WIDENED: "widened",
    XPASS: "xpass",
}
LEGEND = [
    ("pass", "pass"),
    ("widened", "pass~ (timing widened)"),
    ("fail", "FAIL"),
    ("xfail", "xfail (known)"),
    ("xpass", "XPASS (known bug fixed?)"),
    ("skip", "skip"),
    ("crash", "CRASH"),
]
MAX_DIFFED_PCAPS = 2
_COUNTER = re.compile(r"^\d+-")


@dataclass
class Diff:
    left: str
    right: str
    pcap: str
    pairs: list[object]
    first: int | None
    summary: str


@dataclass
class Detail:
    id: str
    nodeid: str
    kernel: str
    word: str
    cls: str
    message: str
    text: str = ""
    console: str = ""
    console_link: str = ""
    evidence: Markup = Markup("")
    diffs: list[Diff] = field(default_factory=list)


def _class(word: str) -> str:
    """The colour of a cell word ("xfail 1a2b3c4d5e6f" is an xfail citing its commit)."""
    return _CLASS.get(word.split(" ", 1)[0], "none")


def evidence_dir(run: KernelRun, nodeid: str) -> Path:
    """Where the guest's netns plugin kept this test's pcaps (NETREGRESS_ARTIFACTS)."""
    return run.out_dir / "artifacts" / folder_name(nodeid)


def _word(result: TestResult | None) -> str:
    if result is not None and result.outcome == Outcome.FAIL and XPASS in result.message:
        return XPASS
    return grid.word(result)


def _pcaps(folder: Path) -> dict[str, Path]:
    """The folder's pcaps by name without the per-process counter prefix (differs per run)."""
    if not folder.is_dir():
        return {}
    return {_COUNTER.sub("", p.name): p for p in sorted(folder.glob("*.pcap"))}


def _diffs(passing: KernelRun, failing: KernelRun, nodeid: str) -> list[Diff]:
    good, bad = _pcaps(evidence_dir(passing, nodeid)), _pcaps(evidence_dir(failing, nodeid))
    out = []
    for name in [n for n in bad if n in good][:MAX_DIFFED_PCAPS]:
        pairs = align(read_rows(good[name]), read_rows(bad[name]))
        first = first_divergence(pairs)
        out.append(
            Diff(
                passing.name,
                failing.name,
                name,
                list(pairs),
                first,
                describe(pairs, first, passing.name, failing.name),
            )
        )
    return out


def _detail(
    matrix: Matrix,
    run: KernelRun,
    nodeid: str,
    result: TestResult,
    ident: str,
    word: str,
    out_dir: Path,
) -> Detail:
    detail = Detail(ident, nodeid, run.name, word, _class(word), result.message)
    if result.outcome == Outcome.CRASH:
        excerpt = result.details or (run.problem.excerpt if run.problem else "")
        detail.console = "\n".join(excerpt.splitlines()[-60:])
        detail.console_link = Path(os.path.relpath(run.out_dir / "console.log", out_dir)).as_posix()
        return detail
    if result.details:
        detail.text = "\n".join(result.details.splitlines()[-80:])
    if result.outcome == Outcome.FAIL:
        detail.evidence = Markup(
            evidence_html(evidence_dir(run, nodeid), result.details or result.message, out_dir)
        )
        passing = next(
            (
                other
                for other in matrix.runs
                if (cell := matrix.cell(nodeid, other.name)) and cell.outcome == Outcome.PASS
            ),
            None,
        )
        if passing is not None:
            detail.diffs = _diffs(passing, run, nodeid)
    return detail


def render(matrix: Matrix, out_dir: Path) -> str:
    rows, details = [], []
    for r, nodeid in enumerate(matrix.rows):
        cells, words = [], []
        for c, run in enumerate(matrix.runs):
            result = matrix.cell(nodeid, run.name)
            word = _word(result)
            words.append(word)
            ident = f"d-{r}-{c}" if result is not None else ""
            if result is not None:
                details.append(_detail(matrix, run, nodeid, result, ident, word, out_dir))
            cells.append(
                {
                    "word": word,
                    "cls": _class(word),
                    "id": ident,
                    "title": result.message if result else "",
                }
            )
        rows.append({"nodeid": nodeid, "cells": cells, "text": " ".join([nodeid, *words])})
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["j2"])
    )
    return env.get_template("matrix.html.j2").render(
        generated=time.strftime("Generated %Y-%m-%d %H:%M:%S %Z"),
        kernels=[run.name for run in matrix.runs],
        kernel_header=grid.KERNEL_HEADER,
        kernel_lines=[grid.kernel_line(run) for run in matrix.runs],
        legend=LEGEND,
        rows=rows,
        details=details,
    )


def write(matrix: Matrix, rec: Record, out_dir: Path) -> list[Path]:
    """matrix.html."""
    path = out_dir / FILE
    path.write_text(render(matrix, out_dir))
    return [path]
