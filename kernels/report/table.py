# SPDX-License-Identifier: GPL-2.0-only
"""The matrix: rows = tests, columns = kernels; rendered for the terminal, Markdown and JSON.

Why a synthetic "(kernel console)" row: a WARN splat or oops can happen while every test still
passes; the row makes such a kernel visibly red instead of hiding the finding in a log.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

from kernels.matrix.results import UNEXPECTED, TestResult
from kernels.matrix.runner import KernelRun
from kernels.report.html import write_html

CONSOLE_ROW = "(kernel console)"
_CELL = {"pass": "pass", "fail": "FAIL", "xfail": "xfail", "skip": "skip", "crash": "CRASH"}
# The guest's packetdrill items record their timing verdict as this JSON user property
# (packetdrill/tolerance.py: TimingRecord).
TIMING_PROPERTY = "packetdrill_timing"
WIDENED = "pass~"
LEGEND = (
    f"{WIDENED}: passed only with late-side timing slack for a slow machine "
    "(docs/timing-tolerance.md)"
)


@dataclass(frozen=True)
class Matrix:
    """Every kernel's results, completed so that each row has a cell per kernel."""

    runs: list[KernelRun]
    rows: list[str]
    cells: dict[tuple[str, str], TestResult]

    def cell(self, nodeid: str, kernel: str) -> TestResult | None:
        return self.cells.get((nodeid, kernel))

    def unexpected(self) -> list[tuple[str, str, TestResult]]:
        """(test, kernel, result) for every fail and crash."""
        return [
            (nodeid, run.name, result)
            for nodeid in self.rows
            for run in self.runs
            if (result := self.cell(nodeid, run.name)) and result.outcome in UNEXPECTED
        ]


def build(runs: list[KernelRun], collected: list[str]) -> Matrix:
    """Rows: the host's collection order, then tests only a guest found; crashes fill gaps.

    A kernel that died has no result for the tests after the crash: those cells are "crash"
    too, because the kernel under test is why they did not run.
    """
    rows = list(dict.fromkeys(collected))
    found = {r.nodeid for run in runs for r in run.results}
    rows += sorted(found - set(rows))
    cells: dict[tuple[str, str], TestResult] = {}
    for run in runs:
        for result in run.results:
            cells[(result.nodeid, run.name)] = result
        problem = run.problem
        console = (
            TestResult(CONSOLE_ROW, "crash", problem.reason, problem.excerpt)
            if problem
            else TestResult(CONSOLE_ROW, "pass")
        )
        cells[(CONSOLE_ROW, run.name)] = console
        if problem:
            for nodeid in rows:
                cells.setdefault((nodeid, run.name), TestResult(nodeid, "crash", problem.reason))
    return Matrix(runs, [*rows, CONSOLE_ROW], cells)


def timing(cell: TestResult | None) -> dict[str, object] | None:
    """The packetdrill timing record a guest item attached to its result, if any."""
    for name, value in cell.properties if cell else ():
        if name == TIMING_PROPERTY:
            record: dict[str, object] = json.loads(value)
            return record
    return None


def _packetdrill_slack(run: KernelRun) -> str:
    """The late-side timing slack the guest's packetdrill items ran with (their structured
    timing records): slow, emulated guests get slack, and the report says how much."""
    for result in run.results:
        record = timing(result)
        if record is not None:
            tolerance = record["tolerance"]
            assert isinstance(tolerance, dict)
            slack = float(tolerance["late_slack_usecs"]) / 1000
            return f"+{slack:.1f} ms late ({tolerance['slack_from']})"
    return "-"


def _kernel_line(run: KernelRun) -> list[str]:
    kernel = run.kernel
    boot = f"{run.boot_seconds:.1f}" if run.boot_seconds is not None else "-"
    return [
        run.name,
        kernel.release if kernel else "-",
        kernel.version if kernel else "-",
        run.accel,
        boot,
        f"{run.total_seconds:.1f}",
        _packetdrill_slack(run),
        run.problem.reason if run.problem else "ok",
    ]


KERNEL_HEADER = [
    "kernel",
    "release",
    "version",
    "accel",
    "boot s",
    "total s",
    "pkt tolerance",
    "status",
]


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = [header, ["---"] * len(header), *rows]
        escaped = [[cell.replace("|", "\\|") for cell in line] for line in lines]
        return "\n".join("| " + " | ".join(line) + " |" for line in escaped)
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    )


_COMMIT = re.compile(r"\b[0-9a-f]{12,40}\b")


def _symbol(cell: TestResult | None) -> str:
    """A pass that needed timing widening shows as such; a known kernel difference (an
    expectations.toml xfail citing its commit) shows the commit in its cell, so the grid tells
    kernels apart without opening the reasons."""
    if cell is None:
        return "-"
    record = timing(cell)
    if cell.outcome == "pass" and record and record["verdict"] == "widened":
        return WIDENED
    if cell.outcome == "xfail" and (commit := _COMMIT.search(cell.message)):
        return f"xfail {commit.group()[:12]}"
    return _CELL[cell.outcome]


def _grid(matrix: Matrix, markdown: bool) -> str:
    header = ["test", *(run.name for run in matrix.runs)]
    rows = [[nodeid, *(_symbol(matrix.cell(nodeid, run.name)) for run in matrix.runs)]
            for nodeid in matrix.rows]  # fmt: skip
    legend = [LEGEND] if any(WIDENED in row for row in rows) else []
    return "\n\n".join([_table(header, rows, markdown), *legend])


def _problems(matrix: Matrix, markdown: bool) -> list[str]:
    out = []
    for nodeid, kernel, result in matrix.unexpected():
        title = f"{_CELL[result.outcome]} {nodeid} on {kernel}: {result.message}"
        if not markdown:
            out.append(f"- {title}")
        elif result.outcome == "fail" and result.details:
            out.append(f"### {title}\n```\n{_last_lines(result.details)}\n```")
        else:
            out.append(f"### {title}")
    for run in matrix.runs:
        if run.problem and run.problem.excerpt:
            head = f"{run.name}: {run.problem.reason} (console: {run.out_dir / 'console.log'})"
            excerpt = _last_lines(run.problem.excerpt)
            indented = "\n".join("    " + line for line in excerpt.splitlines())
            out.append(f"### {head}\n```\n{excerpt}\n```" if markdown else f"{head}\n{indented}")
    return out


def _last_lines(text: str, count: int = 40) -> str:
    return "\n".join(text.splitlines()[-count:])


def render_text(matrix: Matrix) -> str:
    """The terminal view: kernels, the grid, then what went wrong."""
    parts = [
        _table(KERNEL_HEADER, [_kernel_line(run) for run in matrix.runs], markdown=False),
        "",
        _grid(matrix, markdown=False),
    ]
    problems = _problems(matrix, markdown=False)
    if problems:
        parts += ["", "Unexpected:", *problems]
    return "\n".join(parts)


def render_markdown(matrix: Matrix) -> str:
    parts = [
        "# netregress kernel matrix",
        "",
        _table(KERNEL_HEADER, [_kernel_line(run) for run in matrix.runs], markdown=True),
        "",
        _grid(matrix, markdown=True),
    ]
    problems = _problems(matrix, markdown=True)
    parts += ["", "## Unexpected", "", *problems] if problems else ["", "All results as expected."]
    return "\n".join(parts) + "\n"


def to_json(matrix: Matrix) -> dict[str, object]:
    kernels = [dict(zip(KERNEL_HEADER, _kernel_line(run), strict=True)) for run in matrix.runs]
    for entry, run in zip(kernels, matrix.runs, strict=True):
        entry["console"] = str(run.out_dir / "console.log")
        entry["crash_excerpt"] = run.problem.excerpt if run.problem else ""
    tests = {
        nodeid: {
            run.name: {"outcome": c.outcome, "message": c.message}
            | ({"timing": record} if (record := timing(c)) else {})
            for run in matrix.runs
            if (c := matrix.cell(nodeid, run.name))
        }
        for nodeid in matrix.rows
    }
    return {"kernels": kernels, "tests": tests, "unexpected": len(matrix.unexpected())}


def write_outputs(matrix: Matrix, out_dir: Path) -> list[Path]:
    """matrix.md, matrix.json and matrix.html in `out_dir`; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "matrix.md", out_dir / "matrix.json"]
    written[0].write_text(render_markdown(matrix))
    written[1].write_text(json.dumps(to_json(matrix), indent=2) + "\n")
    kernel_lines = [_kernel_line(run) for run in matrix.runs]
    written.append(write_html(matrix, out_dir, KERNEL_HEADER, kernel_lines, _symbol))
    return written
