# SPDX-License-Identifier: GPL-2.0-only
"""KCIDB export: a healthy kernel reads as healthy on a dashboard.

A real `scripts/matrix` run on the running kernel (no VM) of a demo whose cases prove their
oracles the suite's way (netns/variants.py): one case whose broken variant fails as required,
one whose broken variant passes (the oracle went blind, XPASS strict), and a per-kernel known
failure. The export must show 0 failures for the healthy case, 1 for the blind one, the known
failure as today (FAIL plus its issue), validate against KCIDB's own schema, and carry the
links and git fields KCIDB has places for.
"""

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from kcidb_io import schema

from kernels.acquire.kernel import GitSource
from kernels.paths import REPO_ROOT
from kernels.report import kcidb, record
from kernels.report.model import build

DEMO = """
import pytest

from netns.variants import broken


@pytest.mark.parametrize("value", [1, broken(2, id="two", why="2 is not 1")])
def test_healthy(value):
    assert value == 1


@pytest.mark.parametrize("value", [1, broken(1, id="same", why="the same value must fail")])
def test_blind(value):
    assert value == 1


@pytest.mark.xfail(reason="known bug (https://git.kernel.org/linus/b617158dc096)", strict=True)
def test_known():
    assert False
"""
CATALOG = """
[kernels.host]
kind = "running"
"""
BASE = "netregress.test_oracles"


def _matrix(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO_ROOT / "scripts/matrix"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's matrix directory (it fails: the blind oracle's XPASS strict)."""
    base = tmp_path_factory.mktemp("kcidb")
    (base / "test_oracles.py").write_text(DEMO)
    (base / "matrix.toml").write_text(CATALOG)
    proc = _matrix(base, "--catalog", "matrix.toml", "--output", "out", "test_oracles.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return base / "out"


@pytest.mark.parametrize(
    ("nodeid", "path"),
    [
        ("tests/cases/t.py::test_x[on]", "netregress.tests.cases.t.test_x_on"),
        ("tests/cases/t.py::test_x[broken-off]",
         "netregress.tests.cases.t.test_x.oracle_proof.off"),
        ("tests/cases/t.py::test_x[tunl0-broken-gw-connected]",
         "netregress.tests.cases.t.test_x_tunl0.oracle_proof.gw-connected"),
        ("tests/cases/packetdrill/s.pkt::ipv4-broken-later",
         "netregress.tests.cases.packetdrill.s_pkt.ipv4.oracle_proof.later"),
        ("tests/cases/t.py::test_x[unbroken-path]",
         "netregress.tests.cases.t.test_x_unbroken-path"),
    ],
)  # fmt: skip
def test_a_broken_variant_is_a_proof_under_the_case_it_proves(nodeid: str, path: str) -> None:
    assert kcidb.test_path(nodeid) == path


def _failures(data: dict[str, list[dict[str, str]]], prefix: str) -> int:
    return sum(t["status"] == "FAIL" for t in data["tests"] if t["path"].startswith(prefix))


def test_a_proven_oracle_is_a_pass_and_a_blind_one_the_only_failure(run: Path) -> None:
    proc = _matrix(run.parent, "export", "kcidb", "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((run / "kcidb.json").read_text())
    schema.LATEST.validate(data)  # independently of the exporter's own check
    status = {t["path"]: t["status"] for t in data["tests"]}
    assert status == {
        f"{BASE}.test_healthy_1": "PASS",
        f"{BASE}.test_healthy.oracle_proof.two": "PASS",
        f"{BASE}.test_blind_1": "PASS",
        f"{BASE}.test_blind.oracle_proof.same": "FAIL",
        f"{BASE}.test_known": "FAIL",
        "netregress.kernel_console": "PASS",
    }
    assert _failures(data, f"{BASE}.test_healthy") == 0
    assert _failures(data, f"{BASE}.test_blind") == 1
    blind = next(t for t in data["tests"] if t["path"].endswith("oracle_proof.same"))
    assert "XPASS(strict)" in blind["comment"]
    # The known failure stays what it was: FAIL, tied to its issue, which links the fix.
    (issue,) = data["issues"]
    (incident,) = data["incidents"]
    assert incident["test_id"].endswith("::test_known")
    assert issue["report_url"] == "https://git.kernel.org/linus/b617158dc096"
    # Blamed on the kernel: an issue whose culprit names no layer is invalid in KCIDB.
    assert issue["culprit"] == {"code": True, "tool": False, "harness": False}
    assert issue["report_subject"] == issue["comment"]


def test_links_point_into_the_published_directory(run: Path) -> None:
    data = kcidb.export(record.read(run), "https://ci.example/run/7/artifacts/")
    for test in data["tests"]:
        assert test["log_url"] == "https://ci.example/run/7/artifacts/ktap-host.tap"
        assert test["output_files"] == [
            {"name": "matrix.html", "url": "https://ci.example/run/7/artifacts/matrix.html"}
        ]
    assert "log_url" not in kcidb.export(record.read(run))["tests"][0]


def test_a_publication_address_that_is_no_url_is_a_clear_error(run: Path) -> None:
    proc = _matrix(run.parent, "export", "kcidb", "--url", "artifacts/run-7", "out")
    assert proc.returncode == 2
    assert "--url 'artifacts/run-7': not an http(s) address" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_kernel_built_from_a_git_tree_names_its_checkout(run: Path, tmp_path: Path) -> None:
    """What a `kind = "source"` kernel records (kernels/acquire/from_source/source.py), read
    back from runs.json and exported into KCIDB's git fields."""
    rec = record.read(run)
    (entry,) = rec.entries
    assert entry.run.kernel is not None
    git = GitSource("a" * 40, "https://git.kernel.org/pub/scm/linux/kernel/git/netdev/net.git",
                    "main", "b" * 64)  # fmt: skip
    built = replace(entry.run, kernel=replace(entry.run.kernel, git=git))
    record.write(build([built], rec.collected), replace(rec, entries=[replace(entry, run=built)]),
                 tmp_path)  # fmt: skip
    (checkout,) = kcidb.export(record.read(tmp_path))["checkouts"]
    assert checkout["git_commit_hash"] == "a" * 40
    assert checkout["git_repository_url"] == git.repository_url
    assert checkout["git_repository_branch"] == "main"
    assert checkout["patchset_hash"] == "b" * 64


def test_a_bisect_result_blames_the_first_bad_commit() -> None:
    """`scripts/bisect --kcidb`: the first bad commit is a checkout with its git fields, the
    selection's test fails there, and an issue blames that commit's code (culprit) with its
    subject, tied to the test by an incident; all of it valid against KCIDB's schema."""
    commit = "4b9d3f1c0e2a5d6b7c8e9f0a1b2c3d4e5f6a7b8c"
    source = GitSource(commit, "https://git.kernel.org/pub/scm/linux/kernel/git/netdev/net.git")
    data = kcidb.bisect_culprit(
        source,
        "tcp: refine the write-queue limit",
        "v6.0",
        ["tests/cases/test_c01_tcp_wqueue_too_big.py"],
        "2026-11-26T00:00:00+00:00",
        "x86_64",
    )
    schema.LATEST.validate(data)
    (checkout,), (test,), (issue,), (incident,) = (
        data[key] for key in ("checkouts", "tests", "issues", "incidents")
    )
    assert checkout["git_commit_hash"] == commit
    assert checkout["git_repository_url"].startswith("https://git.kernel.org/")
    assert test["status"] == "FAIL"
    assert test["path"] == kcidb.test_path("tests/cases/test_c01_tcp_wqueue_too_big.py")
    assert issue["culprit"] == {"code": True, "tool": False, "harness": False}
    assert issue["report_subject"] == "4b9d3f1c0e2a tcp: refine the write-queue limit"
    assert (incident["issue_id"], incident["test_id"]) == (issue["id"], test["id"])
