# SPDX-License-Identifier: GPL-2.0-only
"""The matrix as tables: the terminal view a run prints and matrix.md.

Why both here: they are one layout (kernels, the grid, what went wrong) told in two syntaxes,
and Markdown escapes only what plain text does not need to.
"""

from pathlib import Path

from kernels.matrix.results import Outcome
from kernels.report import grid
from kernels.report.model import Matrix
from kernels.report.record import Record

FILE = "matrix.md"


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


def _kernels(matrix: Matrix, markdown: bool) -> str:
    return _table(grid.KERNEL_HEADER, [grid.kernel_line(run) for run in matrix.runs], markdown)


def _grid(matrix: Matrix, markdown: bool) -> str:
    header = ["test", *(run.name for run in matrix.runs)]
    rows = [[nodeid, *(grid.word(matrix.cell(nodeid, run.name)) for run in matrix.runs)]
            for nodeid in matrix.rows]  # fmt: skip
    legend = [grid.LEGEND] if any(grid.WIDENED in row for row in rows) else []
    return "\n\n".join([_table(header, rows, markdown), *legend])


def _problems(matrix: Matrix, markdown: bool) -> list[str]:
    out = []
    for nodeid, kernel, result in matrix.unexpected():
        title = f"{grid.WORDS[result.outcome]} {nodeid} on {kernel}: {result.message}"
        if not markdown:
            out.append(f"- {title}")
        elif result.outcome == Outcome.FAIL and result.details:
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
    parts = [_kernels(matrix, markdown=False), "", _grid(matrix, markdown=False)]
    problems = _problems(matrix, markdown=False)
    if problems:
        parts += ["", "Unexpected:", *problems]
    return "\n".join(parts)


def render_markdown(matrix: Matrix) -> str:
    parts = [
        "# netregress kernel matrix",
        "",
        _kernels(matrix, markdown=True),
        "",
        _grid(matrix, markdown=True),
    ]
    problems = _problems(matrix, markdown=True)
    parts += ["", "## Unexpected", "", *problems] if problems else ["", "All results as expected."]
    return "\n".join(parts) + "\n"


def write(matrix: Matrix, rec: Record, out_dir: Path) -> list[Path]:
    """matrix.md."""
    path = out_dir / FILE
    path.write_text(render_markdown(matrix))
    return [path]
