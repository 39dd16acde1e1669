# SPDX-License-Identifier: GPL-2.0-only
"""The matrix as KernelCI's KCIDB data (`scripts/matrix export kcidb DIR`), checked against the
published schema (the `kcidb-io` package) before anything is written.

How a matrix maps (docs/kcidb.md has the table):
- one checkout and one build per kernel column: we test distribution or local builds rather
  than a git checkout, so the checkout names the source (Debian suite, image path, tree) and
  the build carries release, exact version and configuration (the Debian flavour); a kernel
  built from a git tree also names its repository, commit and uncommitted changes;
- one test per cell, path `netregress.<file>.<test>`, plus `netregress.kernel_console` for the
  console row, so a WARN or a panic is a failed test of that build;
- a broken variant (netns/variants.py: a case's configuration that must fail its oracle, a
  strict xfail on every kernel) is the test `<case path>.oracle_proof.<id>`: PASS when the
  oracle failed as required, FAIL when it did not (the oracle went blind). Why: KCIDB has no
  expected failure, so exported as a failure it made every healthy kernel show one failure
  per proven case;
- status: pass PASS, fail FAIL, skip SKIP; a crash FAIL for the test that took the kernel
  down (its cell holds the console excerpt) and MISS for the tests that never ran after it;
  a per-kernel known failure (kernels/expectations.toml) FAIL plus an issue (its link as the
  report URL) and an incident saying it is the known bug, which is how KCIDB tells known from
  new failures;
- links, given the address the result directory is published at: each test's plain-text log
  is its kernel's KTAP file, and matrix.html (plots, trace diffs) is its output file.
"""

import hashlib
import re
import urllib.parse
from typing import Any

import jsonschema
from kcidb_io import schema

from kernels.acquire.kernel import GitSource
from kernels.errors import KernelsError
from kernels.matrix.expectations import link_of
from kernels.matrix.results import Outcome, TestResult
from kernels.report import record
from kernels.report.model import CONSOLE_ROW
from netns.variants import split_broken

ORIGIN = "netregress"
ORACLE_PROOF = "oracle_proof"  # the path part under a case that its broken variants prove
_EXCERPT_CHARS = 16384  # the schema's maxLength for log_excerpt
_PATH_PART = re.compile(r"[^A-Za-z0-9_-]+")


def _part(text: str) -> str:
    """One path part: characters KCIDB does not allow become `_`."""
    return _PATH_PART.sub("_", text).strip("_") or "_"


def test_path(nodeid: str) -> str:
    """A KCIDB test path (dot-separated `[A-Za-z0-9_-]` parts) for a pytest node id; a broken
    variant's is under the case it proves (`<case path>.oracle_proof.<id>`)."""
    if nodeid == CONSOLE_ROW:
        return f"{ORIGIN}.kernel_console"
    proven = split_broken(nodeid)
    if proven is not None:
        case, broken_id = proven
        return f"{test_path(case)}.{ORACLE_PROOF}.{_part(broken_id)}"
    file_part, _, name = nodeid.partition("::")
    parts = [*file_part.removesuffix(".py").split("/"), *name.split("::")]
    return ".".join([ORIGIN, *(_part(part) for part in parts if part)])


def _status(cell: TestResult) -> str:
    match cell.outcome:
        case Outcome.SKIP:
            return "SKIP"
        case Outcome.CRASH:
            return "FAIL" if cell.details else "MISS"
        case outcome if split_broken(cell.nodeid) is not None:
            # The proof holds only as the expected failure; a pass (XPASS strict is a
            # failed call) or a failure of another kind proves nothing.
            return "PASS" if outcome == Outcome.XFAIL else "FAIL"
        case Outcome.PASS:
            return "PASS"
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


def _git_fields(git: GitSource) -> dict[str, str]:
    """The checkout's git fields: commit, patchset (uncommitted changes; "" for none, which is
    how KCIDB says a checkout is the commit itself), repository and branch when known."""
    fields = {"git_commit_hash": git.commit, "patchset_hash": git.patchset_hash}
    if git.repository_url:
        fields["git_repository_url"] = git.repository_url
    if git.branch:
        fields["git_repository_branch"] = git.branch
    return fields


def _checkout_and_build(
    rec: record.Record, entry: record.Entry
) -> tuple[dict[str, Any], dict[str, Any]]:
    run, kernel = entry.run, entry.run.kernel
    base = f"{ORIGIN}:{rec.run_id}:{run.name}"
    tree, config = _config(entry.source)
    described = f"{run.name} {kernel.release} ({kernel.version})" if kernel else run.name
    checkout: dict[str, Any] = {
        "id": base, "origin": ORIGIN, "tree_name": tree, "start_time": rec.started,
        "valid": kernel is not None, "comment": described, "misc": dict(entry.source),
    }  # fmt: skip
    if kernel is not None and kernel.git is not None:
        checkout |= _git_fields(kernel.git)
    build: dict[str, Any] = {
        "id": f"{base}:build", "checkout_id": base, "origin": ORIGIN, "start_time": rec.started,
        "architecture": rec.arch, "config_name": config, "comment": described,
        "status": "PASS" if kernel else "MISS",
        "misc": {"release": kernel.release, "version": kernel.version} if kernel else {},
    }  # fmt: skip
    if kernel is None and run.problem is not None:
        build["log_excerpt"] = _excerpt(f"{run.problem.reason}\n{run.problem.excerpt}".strip())
    return checkout, build


def _test(
    build: dict[str, Any], run_name: str, accel: str, cell: TestResult, url: str
) -> dict[str, Any]:
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
    if url:
        test["log_url"] = f"{url}/{urllib.parse.quote(f'ktap-{run_name}.tap')}"
        test["output_files"] = [{"name": "matrix.html", "url": f"{url}/matrix.html"}]
    return test


def _known(test: dict[str, Any], reason: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The issue (one per distinct reason) and the incident tying this test to it."""
    issue_id = f"{ORIGIN}:known:{hashlib.sha256(reason.encode()).hexdigest()[:16]}"
    # culprit: a known failure is the kernel's (the tested code), not our test's or harness's;
    # KCIDB treats an issue that blames no layer as invalid.
    culprit = {"code": True, "tool": False, "harness": False}
    issue = {"id": issue_id, "version": 1, "origin": ORIGIN, "comment": reason,
             "report_subject": reason, "culprit": culprit}  # fmt: skip
    if link := link_of(reason):
        issue["report_url"] = link
    incident = {"id": f"{test['id']}:known", "origin": ORIGIN, "issue_id": issue_id,
                "issue_version": 1, "test_id": test["id"], "present": True}  # fmt: skip
    return issue, incident


def _kernel_objects(
    rec: record.Record, entry: record.Entry, url: str
) -> dict[str, list[dict[str, Any]]]:
    run = entry.run
    checkout, build = _checkout_and_build(rec, entry)
    console = TestResult(CONSOLE_ROW, Outcome.PASS)
    if run.problem is not None:
        excerpt = run.problem.excerpt or run.problem.reason
        console = TestResult(CONSOLE_ROW, Outcome.CRASH, run.problem.reason, excerpt)
    out: dict[str, list[dict[str, Any]]] = {
        "checkouts": [checkout],
        "builds": [build],
        "tests": [],
        "issues": [],
        "incidents": [],
    }
    for cell in [*run.results, console]:
        test = _test(build, run.name, run.accel, cell, url)
        out["tests"].append(test)
        if cell.outcome == Outcome.XFAIL and split_broken(cell.nodeid) is None:
            issue, incident = _known(test, cell.message)
            out["issues"].append(issue)
            out["incidents"].append(incident)
    return out


def _published_at(url: str) -> str:
    """The address the result directory is published at, checked: KCIDB links are absolute."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise KernelsError(f"--url {url!r}: not an http(s) address (e.g. https://ci.example/run/7)")
    return url.rstrip("/")


def _validated(data: dict[str, Any]) -> dict[str, Any]:
    try:
        schema.LATEST.validate(data)
    except jsonschema.exceptions.ValidationError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        raise KernelsError(f"KCIDB export does not match schema {schema.LATEST}: {where}: "
                           f"{exc.message}") from None  # fmt: skip
    return data


def bisect_culprit(
    git: GitSource, subject: str, good: str, selection: list[str], started: str, arch: str
) -> dict[str, Any]:
    """A bisect's result as KCIDB data: the first bad commit as a checkout (its git fields)
    with its build, the selection's failing test there, and an issue that blames the code of
    that commit (`culprit`), its subject as the report subject, tied to the test by an
    incident: how KCIDB says "this commit broke this test"."""
    base = f"{ORIGIN}:bisect:{git.commit}"
    name = " ".join(selection) or "the selected tests"
    checkout = {
        "id": base,
        "origin": ORIGIN,
        "start_time": started,
        "valid": True,
        "comment": f"first bad commit: {git.commit[:12]} {subject}",
    } | _git_fields(git)
    build = {
        "id": f"{base}:build",
        "checkout_id": base,
        "origin": ORIGIN,
        "start_time": started,
        "architecture": arch,
        "status": "PASS",
    }
    paths = [test_path(item) for item in selection if "::" in item or item.endswith(".py")]
    test = {
        "id": f"{base}:test",
        "build_id": build["id"],
        "origin": ORIGIN,
        "path": paths[0] if len(paths) == 1 else f"{ORIGIN}.bisect",
        "status": "FAIL",
        "start_time": started,
        "comment": f"fails from {git.commit[:12]} on ({good} passes)",
        "misc": {"selection": selection},
    }
    issue = {
        "id": base,
        "version": 1,
        "origin": ORIGIN,
        "report_subject": f"{git.commit[:12]} {subject}",
        "comment": f"git bisect: {git.commit} is the first bad commit for {name}",
        "culprit": {"code": True, "tool": False, "harness": False},
    }
    incident = {"id": f"{base}:incident", "origin": ORIGIN, "issue_id": base,
                "issue_version": 1, "test_id": test["id"], "present": True}  # fmt: skip
    version = schema.LATEST
    return _validated({
        "version": {"major": version.major, "minor": version.minor},
        "checkouts": [checkout], "builds": [build], "tests": [test],
        "issues": [issue], "incidents": [incident],
    })  # fmt: skip


def summary(data: dict[str, Any]) -> str:
    """What an export holds, for the line that says where it was written."""
    counts = ", ".join(f"{len(data.get(key, []))} {key}" for key in ("checkouts", "builds",
                       "tests", "issues", "incidents"))  # fmt: skip
    return f"KCIDB {data['version']['major']}.{data['version']['minor']}: {counts}"


def export(rec: record.Record, url: str = "") -> dict[str, Any]:
    """KCIDB data for a result directory's record, validated against the latest schema; with
    `url` (where the directory is published) each test links its kernel's KTAP file and
    matrix.html there."""
    version = schema.LATEST
    base = _published_at(url) if url else ""
    data: dict[str, Any] = {"version": {"major": version.major, "minor": version.minor}}
    for entry in rec.entries:
        for key, objects in _kernel_objects(rec, entry, base).items():
            data.setdefault(key, []).extend(objects)
    data["issues"] = list({issue["id"]: issue for issue in data.get("issues", [])}.values())
    return _validated(data)
