"""The matrix as KernelCI's KCIDB data (`scripts/matrix export kcidb DIR`), checked against the
published schema (the `kcidb-io` package) before anything is written.

How a matrix maps (docs/kcidb.md has the table):
- one checkout and one build per kernel column: we test distribution or local builds rather
  than a git checkout, so the checkout names the source (Debian suite, image path, tree) and
  the build carries release, exact version and configuration (the Debian flavour);
- one test per cell, path `netregress.<file>.<test>`, plus `netregress.kernel_console` for the
  console row, so a WARN or a panic is a failed test of that build;
- status: pass PASS, fail FAIL, skip SKIP; a crash FAIL for the test that took the kernel
  down (its cell holds the console excerpt) and MISS for the tests that never ran after it;
  an expected failure (kernels/expectations.toml) FAIL plus an issue and an incident saying
  it is the known bug, which is how KCIDB tells known from new failures.
"""

import hashlib
import re
from typing import Any

import jsonschema
from kcidb_io import schema

from kernels.errors import KernelsError
from kernels.matrix.results import TestResult
from kernels.report import record
from kernels.report.table import CONSOLE_ROW

ORIGIN = "netregress"
_EXCERPT_CHARS = 16384  # the schema's maxLength for log_excerpt
_PATH_PART = re.compile(r"[^A-Za-z0-9_-]+")


def test_path(nodeid: str) -> str:
    """A KCIDB test path (dot-separated `[A-Za-z0-9_-]` parts) for a pytest node id."""
    if nodeid == CONSOLE_ROW:
        return f"{ORIGIN}.kernel_console"
    file_part, _, name = nodeid.partition("::")
    parts = [*file_part.removesuffix(".py").split("/"), *name.split("::")]
    cleaned = [_PATH_PART.sub("_", part).strip("_") or "_" for part in parts if part]
    return ".".join([ORIGIN, *cleaned])


def _status(cell: TestResult) -> str:
    match cell.outcome:
        case "pass":
            return "PASS"
        case "skip":
            return "SKIP"
        case "crash":
            return "FAIL" if cell.details else "MISS"
        case _:
            return "FAIL"  # a failure, or a declared known failure (see the incident)


def _excerpt(text: str) -> str:
    return text[-_EXCERPT_CHARS:]


def _config(source: dict[str, str]) -> tuple[str, str]:
    """(tree name, configuration name) of a catalog entry."""
    match source.get("kind"):
        case "debian":
            return f"debian-{source['suite']}", source["flavour"]
        case "running":
            return "running", "running"
        case kind:
            return str(kind), source.get("image") or source.get("tree") or str(kind)


def _checkout_and_build(
    rec: record.Record, entry: record.Entry
) -> tuple[dict[str, Any], dict[str, Any]]:
    run, kernel = entry.run, entry.run.kernel
    base = f"{ORIGIN}:{rec.run_id}:{run.name}"
    tree, config = _config(entry.source)
    described = f"{run.name} {kernel.release} ({kernel.version})" if kernel else run.name
    checkout = {
        "id": base, "origin": ORIGIN, "tree_name": tree, "start_time": rec.started,
        "valid": kernel is not None, "comment": described, "misc": dict(entry.source),
    }  # fmt: skip
    build: dict[str, Any] = {
        "id": f"{base}:build", "checkout_id": base, "origin": ORIGIN, "start_time": rec.started,
        "architecture": rec.arch, "config_name": config, "comment": described,
        "status": "PASS" if kernel else "MISS",
        "misc": {"release": kernel.release, "version": kernel.version} if kernel else {},
    }  # fmt: skip
    if kernel is None and run.problem is not None:
        build["log_excerpt"] = _excerpt(f"{run.problem.reason}\n{run.problem.excerpt}".strip())
    return checkout, build


def _test(build: dict[str, Any], run_name: str, accel: str, cell: TestResult) -> dict[str, Any]:
    test: dict[str, Any] = {
        "id": f"{build['id']}:{cell.nodeid}", "build_id": build["id"], "origin": ORIGIN,
        "path": test_path(cell.nodeid), "status": _status(cell),
        "start_time": build["start_time"],
        "environment": {"comment": f"{run_name}, accel {accel}"},
        "misc": {"nodeid": cell.nodeid, "outcome": cell.outcome},
    }  # fmt: skip
    if cell.message:
        test["comment"] = cell.message
    if cell.details:
        test["log_excerpt"] = _excerpt(cell.details)
    if cell.duration:
        test["duration"] = cell.duration
    return test


def _known(test: dict[str, Any], reason: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The issue (one per distinct reason) and the incident tying this test to it."""
    issue_id = f"{ORIGIN}:known:{hashlib.sha256(reason.encode()).hexdigest()[:16]}"
    issue = {"id": issue_id, "version": 1, "origin": ORIGIN, "comment": reason}
    incident = {"id": f"{test['id']}:known", "origin": ORIGIN, "issue_id": issue_id,
                "issue_version": 1, "test_id": test["id"], "present": True}  # fmt: skip
    return issue, incident


def _kernel_objects(rec: record.Record, entry: record.Entry) -> dict[str, list[dict[str, Any]]]:
    run = entry.run
    checkout, build = _checkout_and_build(rec, entry)
    console = TestResult(CONSOLE_ROW, "pass")
    if run.problem is not None:
        excerpt = run.problem.excerpt or run.problem.reason
        console = TestResult(CONSOLE_ROW, "crash", run.problem.reason, excerpt)
    out: dict[str, list[dict[str, Any]]] = {
        "checkouts": [checkout],
        "builds": [build],
        "tests": [],
        "issues": [],
        "incidents": [],
    }
    for cell in [*run.results, console]:
        test = _test(build, run.name, run.accel, cell)
        out["tests"].append(test)
        if cell.outcome == "xfail":
            issue, incident = _known(test, cell.message)
            out["issues"].append(issue)
            out["incidents"].append(incident)
    return out


def export(rec: record.Record) -> dict[str, Any]:
    """KCIDB data for a result directory's record, validated against the latest schema."""
    version = schema.LATEST
    data: dict[str, Any] = {"version": {"major": version.major, "minor": version.minor}}
    for entry in rec.entries:
        for key, objects in _kernel_objects(rec, entry).items():
            data.setdefault(key, []).extend(objects)
    data["issues"] = list({issue["id"]: issue for issue in data.get("issues", [])}.values())
    try:
        version.validate(data)
    except jsonschema.exceptions.ValidationError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        raise KernelsError(f"KCIDB export does not match schema {version}: {where}: "
                           f"{exc.message}") from None  # fmt: skip
    return data
