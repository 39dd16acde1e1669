# SPDX-License-Identifier: GPL-2.0-only
"""What a release bisect found, for people (Markdown, the terminal) and tools (JSON).

Why the changelog lives here and not in the search: the search only needs verdicts; what lies
between the two builds it lands on (the upstream stable releases, the commit titles, the
suspects) is read afterwards from the newer build's changelog, when the package ships one.
"""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernels.acquire import changelog
from kernels.acquire.changelog import Change
from kernels.acquire.debian_series import Packaged
from kernels.acquire.kernel import version_tuple
from kernels.bisect.releases import Search
from kernels.bisect.suspects import Suspect, name_words, rank

SHOWN_SUSPECTS = 15  # in the terminal and Markdown; the JSON keeps them all


@dataclass
class Report:
    """A search, what it ran on, and what the changelog says lies between its two builds."""

    suite: str
    flavour: str
    branch: str
    selection: list[str]
    search: Search
    seconds: float
    releases: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    changelog: str = ""  # where the changes were read, or why not
    suspects: list[Suspect] = field(default_factory=list)

    @property
    def fix(self) -> bool:
        """True when the newer builds pass what the older ones fail."""
        return self.search.old_verdict == "bad"

    def words(self) -> tuple[str, str]:
        """How the two builds are called: last good / first bad, or last bad / first good."""
        return ("last bad", "first good") if self.fix else ("last good", "first bad")


def stable_range(before: Packaged, after: Packaged) -> list[str]:
    """The upstream stable releases after `before`'s up to `after`'s: 6.1.190 → 6.1.192 gives
    6.1.191 and 6.1.192 (none when both builds carry the same release)."""
    low, high = version_tuple(before.upstream), version_tuple(after.upstream)
    if len(low) < 3 or len(high) < 3 or low[:2] != high[:2]:
        return [after.upstream] if low != high else []
    return [f"{low[0]}.{low[1]}.{n}" for n in range(low[2] + 1, high[2] + 1)]


def add_changes(report: Report, newer: Path | None, older: Path | None) -> None:
    """Fill in the changes between the two builds from their changelogs (`newer`'s entries
    that `older`'s lacks; without `older`, those taking a later stable release), and rank the
    suspects for the failing tests' subsystems."""
    before, after = report.search.before, report.search.after
    assert before is not None and after is not None
    report.releases = stable_range(before, after)
    if newer is None:
        report.changelog = f"{after.package} ships no changelog: no commit titles"
        return
    entries = changelog.read(newer)
    if older is not None:
        new_entries = changelog.newer_than(entries, changelog.read(older))
    else:
        new_entries = changelog.since_release(entries, version_tuple(before.upstream))
    report.changelog = str(newer)
    report.changes = [change for entry in new_entries for change in entry.changes]
    search = report.search
    report.suspects = rank(report.changes, search.subsystems(), name_words(search.failed()))


def _kernel(kernel: Packaged) -> dict[str, str]:
    return {**asdict(kernel), "upstream": kernel.upstream}


def to_json(report: Report) -> dict[str, object]:
    """The report as data (`release-bisect.json`)."""
    search = report.search
    first, second = report.words()
    return {
        "suite": report.suite,
        "flavour": report.flavour,
        "branch": report.branch,
        "selection": report.selection,
        "direction": "fix" if report.fix else "regression",
        "series": [_kernel(k) for k in search.series],
        "steps": [
            {**_kernel(s.kernel), "verdict": s.verdict, "why": s.why,
             "seconds": round(s.seconds, 1), "subsystems": list(s.subsystems)}
            for s in search.steps
        ],
        first.replace(" ", "_"): _kernel(search.before) if search.before else None,
        second.replace(" ", "_"): _kernel(search.after) if search.after else None,
        "untested_between": [_kernel(k) for k in search.between],
        "stable_releases": report.releases,
        "changelog": report.changelog,
        "changes": len(report.changes),
        "subsystems": list(search.subsystems()),
        "suspects": [
            {"title": s.change.title, "release": s.change.release, "tier": s.tier, "why": s.why}
            for s in report.suspects
        ],
        "seconds": round(report.seconds, 1),
    }  # fmt: skip


def summary(report: Report) -> list[str]:
    """The lines the command prints at the end (and the Markdown's result)."""
    search = report.search
    assert search.before is not None and search.after is not None
    first, second = report.words()
    lines = [
        f"{first}:  {search.before.package} {search.before.version} "
        f"(upstream {search.before.upstream})",
        f"{second}: {search.after.package} {search.after.version} "
        f"(upstream {search.after.upstream})",
    ]
    if search.between:
        names = ", ".join(f"{k.abi} ({k.version})" for k in search.between)
        lines.append(f"skipped between them, so any of these may be the {second} too: {names}")
    skipped = [s for s in search.steps if s.verdict == "skip"]
    for step in skipped:
        lines.append(f"skipped {step.kernel.abi} ({step.kernel.version}): {step.why}")
    shown = report.releases
    releases = (
        f"{shown[0]} … {shown[-1]} ({len(shown)} releases)" if len(shown) > 6
        else ", ".join(shown) or "none (the same upstream release)"
    )  # fmt: skip
    lines.append(f"upstream stable releases in between: {releases}")
    subsystems = ", ".join(search.subsystems()) or "none marked"
    lines.append(
        f"commits in between: {len(report.changes)} ({report.changelog}); "
        f"suspects for {subsystems}: {len(report.suspects)}"
    )
    lines += [
        f"  {s.change.release or 'debian'}  {s.change.title}  [{s.why}]"
        for s in report.suspects[:SHOWN_SUSPECTS]
    ]
    lines.append(f"{len(search.steps)} steps, {report.seconds:.0f} s")
    return lines


def to_markdown(report: Report) -> str:
    """The report for people (`release-bisect.md`): the series with each step's verdict, the
    result, the suspects, and the catalog entries that boot the two builds again."""
    search = report.search
    judged = {s.kernel.abi: s for s in search.steps}
    out = [
        f"# Release bisect: Debian {report.suite} {report.flavour}, branch {report.branch}",
        "",
        f"Selection: `{' '.join(report.selection)}`",
        "",
        "| package | version | upstream | pocket | verdict | why | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for kernel in search.series:
        step = judged.get(kernel.abi)
        cells = [step.verdict, step.why, f"{step.seconds:.0f}"] if step else ["", "", ""]
        row = [kernel.package, kernel.version, kernel.upstream, kernel.pocket, *cells]
        out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    out += ["", "## Result", "", "```", *summary(report), "```", ""]
    out += ["## Re-run on the same builds (kernels/matrix.toml)", "", "```toml"]
    for pinned in (search.before, search.after):
        if pinned is not None:
            out += [f'[kernels."{report.suite}-{pinned.abi}"]', 'kind = "debian"',
                    f'suite = "{report.suite}"', f'flavour = "{report.flavour}"',
                    f'version = "{pinned.abi}"', "default = false", ""]  # fmt: skip
    out += ["```", ""]
    return "\n".join(out)


def write(report: Report, out: Path) -> list[Path]:
    """Write `release-bisect.md` and `.json` into `out`; the paths written."""
    paths = [out / "release-bisect.md", out / "release-bisect.json"]
    paths[0].write_text(to_markdown(report))
    paths[1].write_text(json.dumps(to_json(report), indent=1) + "\n")
    return paths
