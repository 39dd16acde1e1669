# SPDX-License-Identifier: GPL-2.0-only
"""The campaign for people and tools: mutants.md, mutants.json and mutants.html.

Why the score leaves some mutants out, and says so: a stillborn mutant (it does not build)
tested nothing; a survivor whose file says it is *equivalent* (the change cannot alter
behaviour) or *not observable* (no test in namespaces inside a VM can see it) is not a
regression the suite could catch. Each is listed with its reason, never dropped silently.
"""

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from kernels.errors import KernelsError
from kernels.mutation.campaign import CONTROL, Record

EXCUSES = ("equivalent", "not observable")


@dataclass(frozen=True)
class Score:
    """Caught (killed + crashed) out of the mutants that count."""

    killed: int
    crashed: int
    survived: int
    excused: int
    stillborn: int

    @property
    def counted(self) -> int:
        return self.killed + self.crashed + self.survived

    @property
    def percent(self) -> float | None:
        return 100.0 * (self.killed + self.crashed) / self.counted if self.counted else None

    def text(self) -> str:
        share = f"{self.percent:.0f} %" if self.percent is not None else "n/a"
        return (
            f"{share} caught ({self.killed + self.crashed} of {self.counted}: {self.killed} "
            f"killed, {self.crashed} crashed, {self.survived} survived; not counted: "
            f"{self.excused} equivalent or not observable, {self.stillborn} stillborn)"
        )


def excused(record: Record) -> bool:
    """A survivor whose file says why no test can catch it."""
    return record.outcome == "survived" and record.survivor.lower().startswith(EXCUSES)


def score(records: list[Record]) -> Score:
    mutants = [r for r in records if r.name != CONTROL]
    counts = Counter(r.outcome for r in mutants if not excused(r))
    return Score(
        killed=counts["killed"],
        crashed=counts["crashed"],
        survived=counts["survived"],
        excused=sum(excused(r) for r in mutants),
        stillborn=counts["stillborn"],
    )


_STRENGTH = {"crashed": 3, "killed": 2, "survived": 1, "stillborn": 0, "control": -1}


def combine(campaigns: list[list[Record]]) -> list[Record]:
    """Several campaigns over the same mutants (the curated set, then new tests for its
    survivors) as one: each mutant with its strongest verdict and every kill any campaign
    saw. Each kill was judged against its own campaign's control, so a union is honest."""
    merged: dict[str, Record] = {}
    for records in campaigns:
        for record in records:
            best = merged.get(record.name)
            if best is None:
                merged[record.name] = Record(**asdict(record))
                continue
            kills = [*best.kills, *(k for k in record.kills if k not in best.kills)]
            if _STRENGTH[record.outcome] > _STRENGTH[best.outcome]:
                best = merged[record.name] = Record(**asdict(record))
            best.kills = kills
    return list(merged.values())


def load(folder: Path) -> list[Record]:
    """The records of a finished campaign (its mutants.json)."""
    path = folder / "mutants.json"
    try:
        data = json.loads(path.read_text())
        return [Record(**item) for item in data["mutants"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KernelsError(f"{path}: not a campaign's report ({exc})") from None


def by_subsystem(records: list[Record]) -> dict[str, Score]:
    names = sorted({r.subsystem for r in records if r.name != CONTROL})
    return {name: score([r for r in records if r.subsystem == name]) for name in names}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(records: list[Record], wall: float, before: Score | None = None) -> str:
    """The table reviewers read: score, per subsystem, then one row per mutant."""
    control = next((r for r in records if r.name == CONTROL), None)
    lines = [
        "# Mutation campaign",
        "",
        f"**Score: {score(records).text()}.**",
        "",
    ]
    if before is not None:
        lines += [f"Before the later campaigns: {before.text()}.", ""]
    if control is not None:
        lines.append(
            f"Control: {control.release}, built in {control.build_seconds:.0f} s, suite run "
            f"{control.run_seconds:.0f} s. Campaign wall time {wall:.0f} s."
        )
        lines.append("")
        if control.changed:
            lines += ["Flaky on the control (failed once, passed alone; they kill nothing here):",
                      *(f"- {line}" for line in control.changed), ""]  # fmt: skip
    if control is not None:
        older = [r.name for r in records if r.name != CONTROL and r.suite != control.suite]
        if older:
            lines += [f"Judged with an earlier suite (re-judge with `--fresh`): "
                      f"{', '.join(older)}.", ""]  # fmt: skip
    lines += ["| subsystem | score |", "|---|---|"]
    lines += [f"| {name} | {part.text()} |" for name, part in by_subsystem(records).items()]
    lines += [
        "",
        "| mutant | breaks | outcome | how | build s | run s |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        if r.name == CONTROL:
            continue
        how = "; ".join(f"{k['nodeid']} ({k['how']}: {k['message'][:120]})" for k in r.kills)
        if r.outcome in ("crashed", "stillborn"):
            how = (how + "; " if how else "") + r.reason
        if r.outcome == "survived":
            how = r.survivor or "**unexplained survivor**"
        breaks = r.behaviour + (f" Upstream: {r.upstream} ({r.range})." if r.upstream else "")
        lines.append(
            f"| {r.name} | {_cell(breaks)} | {r.outcome} | {_cell(how)} | "
            f"{r.build_seconds:.0f} | {r.run_seconds:.0f} |"
        )
    return "\n".join(lines) + "\n"


def write(records: list[Record], out: Path, wall: float, before: Score | None = None) -> list[Path]:
    """mutants.md, mutants.json and mutants.html in `out`; their paths."""
    total = score(records)
    data = {
        "score": {**asdict(total), "percent": total.percent},
        "before": {**asdict(before), "percent": before.percent} if before else None,
        "subsystems": {name: asdict(part) for name, part in by_subsystem(records).items()},
        "wall_seconds": round(wall, 1),
        "mutants": [asdict(r) for r in records],
    }
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["j2"])
    )
    html = env.get_template("mutants.html.j2").render(
        score=total, subsystems=by_subsystem(records), records=records, control=CONTROL,
        excused=excused, wall=wall, before=before,
    )  # fmt: skip
    paths = [out / "mutants.md", out / "mutants.json", out / "mutants.html"]
    paths[0].write_text(markdown(records, wall, before))
    paths[1].write_text(json.dumps(data, indent=1))
    paths[2].write_text(html)
    return paths
