# SPDX-License-Identifier: GPL-2.0-only
"""The JSON a conformance run writes, and reading one back as a reference (``--against``).

One entry per (script, variant), keyed by the script's path inside the corpus, with the
script's sha256: a reference recorded from another version of a script must not be compared
with today's, so a mismatch is reported as stale with the command that re-records it.
"""

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from netregress.errors import NetregressError

from .compare import Summary, agrees, kind_of, marker_matches
from .corpus import Job
from .outcome import Outcome
from .runner import Rerun, Runs

FORMAT = "netregress-conformance/1"


class ReferenceError(NetregressError):
    """A reference JSON that cannot be used: unreadable, not ours, or stale."""


def document(
    meta: dict[str, Any],
    environment: dict[str, Any],
    jobs: list[Job],
    runs: Runs,
    reruns: dict[str, Rerun],
    summary: Summary,
    per_variant: dict[str, Summary],
) -> dict[str, Any]:
    entries = []
    for job in jobs:
        outcomes = runs[job.key]
        entry: dict[str, Any] = {
            "script": job.name,
            "variant": job.variant,
            "sha256": job.sha256,
            "args": option_words(job),
            "expect_fail": job.expect_fail,
            "runs": {name: asdict(outcome) for name, outcome in outcomes.items()},
        }
        if "reference" in outcomes:
            b, r = outcomes["builtin"], outcomes["reference"]
            entry["agree"] = agrees(job, b, r)
            if not entry["agree"]:
                entry["kind"] = kind_of(job, b, r)
            if job.expect_fail is not None:
                entry["marker_matches"] = {
                    "builtin": marker_matches(job, b),
                    "reference": marker_matches(job, r),
                }
        if job.key in reruns:
            entry["rerun"] = asdict(reruns[job.key])
            entry["reproducible"] = reruns[job.key].reproducible
        entries.append(entry)
    return {
        "format": FORMAT,
        **meta,
        "environment": environment,
        "summary": _summary_json(summary),
        "per_variant": {v: _summary_json(s) for v, s in per_variant.items()},
        "entries": entries,
    }


def option_words(job: Job) -> list[str]:
    return [f"--{n}" if v is None else f"--{n}={v}" for n, v in job.options]


def _summary_json(summary: Summary) -> dict[str, Any]:
    data = asdict(summary)
    data["agreement_percent"] = round(summary.agreement, 2)
    return data


def write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except OSError as err:
        raise ReferenceError(f"cannot read {path}: {err.strerror}") from None
    except ValueError as err:
        raise ReferenceError(f"{path}: not JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ReferenceError(f"{path}: not a conformance JSON ({FORMAT})")
    return doc


def reference_outcomes(
    doc: dict[str, Any], path: Path, jobs: list[Job], corpus: Path
) -> dict[str, Outcome]:
    """The recorded reference outcome of every job; raises when the file is stale for them."""
    try:
        return _reference_outcomes(doc, path, jobs, corpus)
    except (KeyError, TypeError, AttributeError) as err:
        raise ReferenceError(f"{path}: malformed conformance JSON ({err!r})") from None


def _reference_outcomes(
    doc: dict[str, Any], path: Path, jobs: list[Job], corpus: Path
) -> dict[str, Outcome]:
    if doc.get("reference", {}).get("kind") != "binary":
        raise ReferenceError(
            f"{path}: holds no runs of a reference binary (it was recorded without --reference)"
        )
    recorded = {
        f"{e['script']} [{e['variant']}]": e
        for e in doc["entries"]
        if "reference" in e.get("runs", {})
    }
    problems = []
    for job in jobs:
        entry = recorded.get(job.key)
        if entry is None:
            problems.append(f"{job.key}: not in the reference")
        elif entry["sha256"] != job.sha256:
            problems.append(f"{job.key}: script changed since it was recorded")
        elif entry["args"] != option_words(job):
            problems.append(f"{job.key}: recorded with other arguments")
    for key, entry in sorted(recorded.items()):
        if not (corpus / entry["script"]).is_file():
            problems.append(f"{key}: recorded, but the script is gone")
    if problems:
        command = doc.get("record_command") or "scripts/conformance ... --out " + str(path)
        raise ReferenceError(
            f"{path} is stale for this corpus:\n  "
            + "\n  ".join(problems)
            + f"\nre-record with: {command}"
        )
    return {job.key: _reference_run(recorded[job.key]) for job in jobs}


def _reference_run(entry: dict[str, Any]) -> Outcome:
    """The reference's verdict for an entry: from the re-run that settled a first-run flake
    (the binary, too, can be late once on a loaded machine), else from the first run."""
    settled = (entry.get("rerun") or {}).get("settled")
    return Outcome(**(settled or entry["runs"])["reference"])
