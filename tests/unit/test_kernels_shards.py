# SPDX-License-Identifier: GPL-2.0-only
"""Shards and merge: the plan covers every cell once, and a sharded run merges into the very
matrix a whole run writes (real `scripts/matrix` runs of a small demo on the running kernel,
under two catalog names, so both ways of cutting — by kernel and by test — are exercised)."""

import json
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from kcidb_io import schema
from tap.parser import Parser

from kernels.errors import KernelsError
from kernels.matrix.shard import Piece, parse_shard, plan, slice_tests
from kernels.paths import REPO_ROOT, locked
from kernels.report import kcidb, record

DEMO = """
import pytest


def test_passes():
    pass


def test_fails():
    assert 6 * 7 == 43, "a real failure"


def test_skips():
    pytest.skip("needs a feature # this host lacks")


@pytest.mark.xfail(reason="known bug, fixed upstream", strict=True)
def test_xfails():
    assert False


@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    pass
"""
CATALOG = """
[kernels.host-a]
kind = "running"
[kernels.host-b]
kind = "running"
"""
ROWS = 7  # the demo's tests


@pytest.mark.parametrize("kernels", [1, 2, 3])
@pytest.mark.parametrize("shards", [1, 2, 3, 4, 7])
def test_the_plan_covers_every_cell_exactly_once(kernels: int, shards: int) -> None:
    names = [f"k{i}" for i in range(kernels)]
    collected = [f"t.py::test_{i}" for i in range(5)]
    pieces = plan(names, shards)
    assert len(pieces) == shards
    cells = [(p.kernel, t) for shard in pieces for p in shard for t in slice_tests(collected, p)]
    assert sorted(cells) == sorted((k, t) for k in names for t in collected)


def test_more_shards_than_kernels_slices_kernels_by_test() -> None:
    assert plan(["a", "b"], 3) == [[Piece("a", 0, 2)], [Piece("a", 1, 2)], [Piece("b", 0, 1)]]
    assert plan(["a", "b", "c"], 2) == [[Piece("a"), Piece("c")], [Piece("b")]]


@pytest.mark.parametrize("text", ["0/2", "3/2", "2", "a/b", "1/0", ""])
def test_bad_shard_is_a_clear_error(text: str) -> None:
    with pytest.raises(KernelsError, match="expected I/N"):
        parse_shard(text)


def _matrix(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO_ROOT / "scripts/matrix"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """One whole run, a 2-shard run (by kernel) and a 3-shard run (host-a cut by test).

    Made once for all xdist workers (the first one makes it under a lock, the others reuse
    it): six matrix runs are the slow part of this module."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    base = shared / "kernels-shards"
    with locked(shared / "kernels-shards.lock"):
        if not (base / "done").exists():
            _make_runs(base)
            (base / "done").touch()
    return base


def _make_runs(base: Path) -> None:
    """All six runs at once: they are independent, and mostly wait on pytest start-up."""
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir()
    (base / "test_demo.py").write_text(DEMO)
    (base / "matrix.toml").write_text(CATALOG)
    outputs: dict[str, list[str]] = {"whole": []} | {
        f"s{count}-{index}": ["--shard", f"{index}/{count}"]
        for count in (2, 3) for index in range(1, count + 1)
    }  # fmt: skip
    procs = {
        out: subprocess.Popen(
            [
                str(REPO_ROOT / "scripts/matrix"),
                *extra,
                "--output",
                out,
                "--catalog",
                "matrix.toml",
                "test_demo.py",
            ],
            cwd=base,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for out, extra in outputs.items()
    }
    for out, proc in procs.items():
        log, _ = proc.communicate(timeout=600)
        assert proc.returncode in (0, 1), f"{out}: {log}"
    assert procs["whole"].returncode == 1  # test_fails fails


def _cells(directory: Path) -> dict[str, object]:
    return json.loads((directory / "matrix.json").read_text())["tests"]


def _junit(directory: Path, kernel: str) -> str:
    """A kernel's JUnit file without the durations and the start (each run has its own)."""
    root = ET.parse(directory / f"junit-{kernel}.xml").getroot()
    for element in [root, *root.iter("testcase")]:
        element.attrib.pop("time")
    del root.attrib["timestamp"]
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("count", [2, 3])
def test_merged_shards_equal_the_whole_run(runs: Path, count: int) -> None:
    shards = [f"s{count}-{i}" for i in range(1, count + 1)]
    proc = _matrix(runs, "merge", "--output", f"merged{count}", *shards)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the failure, as in a whole run
    assert "matrix merge:" not in proc.stderr  # no missing or duplicate finding
    whole, merged = runs / "whole", runs / f"merged{count}"
    assert _cells(merged) == _cells(whole)
    assert len(_cells(whole)) == ROWS + 1  # the console row too
    for kernel in ("host-a", "host-b"):
        assert _junit(merged, kernel) == _junit(whole, kernel)
        tap = f"ktap-{kernel}.tap"
        assert (merged / tap).read_text() == (whole / tap).read_text()
    markdown = (merged / "matrix.md").read_text()
    assert "| test_demo.py::test_fails | FAIL | FAIL |" in markdown


def test_a_test_has_one_junit_classname_in_a_plain_run_and_in_the_matrix(
    runs: Path, tmp_path: Path
) -> None:
    """pytest's own --junitxml of the same file on the host and the matrix's file per kernel
    (the same writer for a guest's results) name each test alike; the kernel is the suite's."""
    plain = tmp_path / "plain.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "test_demo.py", f"--junitxml={plain}"], cwd=runs,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr  # test_fails
    by_pytest = {(c.get("classname"), c.get("name")) for c in ET.parse(plain).iter("testcase")}
    suite = ET.parse(runs / "whole/junit-host-a.xml").getroot()
    in_matrix = {(c.get("classname"), c.get("name")) for c in suite.iter("testcase")}
    assert in_matrix - {("", "(kernel console)")} == by_pytest
    assert ("test_demo", "test_param[2]") in by_pytest and len(by_pytest) == ROWS
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert properties["kernel"] == "host-a" and properties["accel"] == "host"
    assert suite.get("name") == "netregress on host-a" and float(suite.get("time", "0")) > 0


def test_a_shard_cuts_the_tests_of_a_kernel(runs: Path) -> None:
    first, second = _cells(runs / "s3-1"), _cells(runs / "s3-2")
    assert len(first) + len(second) == ROWS + 2  # each has its console row
    assert set(first) & set(second) == {"(kernel console)"}


def test_merge_flags_missing_and_duplicate_shards(runs: Path) -> None:
    proc = _matrix(runs, "merge", "--output", "partial", "s3-1", "s3-3", "s3-3")
    assert proc.returncode == 1
    assert "missing: shard 2/3 (host-a slice 2/2)" in proc.stderr
    assert "duplicate: shard 3/3 is in both s3-3 and s3-3" in proc.stderr
    assert "missing: 3 cell(s) on host-a" in proc.stderr
    assert "## Merge findings" in (runs / "partial/matrix.md").read_text()
    overlap = _matrix(runs, "merge", "--output", "overlap", "whole", "s2-1")
    assert overlap.returncode == 1
    assert "duplicate: test_demo.py::test_passes on host-a" in overlap.stderr


def test_merge_of_a_directory_that_is_no_result_is_a_clear_error(runs: Path) -> None:
    proc = _matrix(runs, "merge", str(runs))
    assert proc.returncode == 2
    assert f"matrix: {runs}: not a matrix result directory (no runs.json)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_matrix_ktap_per_kernel_parses_with_tap_py(runs: Path) -> None:
    lines = list(Parser().parse_file(str(runs / "whole/ktap-host-a.tap")))
    results = [line for line in lines if line.category == "test"]
    plans = [line for line in lines if line.category == "plan"]
    assert [plan.expected_tests for plan in plans] == [ROWS + 1]
    assert [r.number for r in results] == list(range(1, ROWS + 2))
    assert sum(not r.ok for r in results) == 1  # test_fails
    assert sum(r.skip for r in results) == 1  # test_skips, with its reason
    skipped = next(r for r in results if r.skip)
    assert skipped.directive.reason == "needs a feature # this host lacks"
    xfail = next(r for r in results if "test_xfails" in r.description)
    assert xfail.ok and xfail.directive.text == "XFAIL known bug, fixed upstream"


def test_kcidb_export_of_a_real_run_validates(runs: Path) -> None:
    """Exports its own merge of the 3-shard run, so it needs no other test to run first
    (under xdist the merge test may run later, or on another worker)."""
    merged = _matrix(runs, "merge", "--output", "merged3-kcidb", "s3-1", "s3-2", "s3-3")
    assert merged.returncode == 1, merged.stdout + merged.stderr  # test_fails fails
    proc = _matrix(runs, "export", "kcidb", "merged3-kcidb")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((runs / "merged3-kcidb/kcidb.json").read_text())
    schema.LATEST.validate(data)  # independently of the exporter's own check
    assert len(data["checkouts"]) == len(data["builds"]) == 2
    assert len(data["tests"]) == 2 * (ROWS + 1)
    status = {(t["build_id"].split(":")[2], t["path"]): t["status"] for t in data["tests"]}
    assert status[("host-a", "netregress.test_demo.test_fails")] == "FAIL"
    assert status[("host-a", "netregress.test_demo.test_skips")] == "SKIP"
    assert status[("host-b", "netregress.test_demo.test_param_2")] == "PASS"
    assert status[("host-b", "netregress.kernel_console")] == "PASS"
    assert len(data["incidents"]) == 2 and len(data["issues"]) == 1  # the xfail, known
    failed = next(t for t in data["tests"] if t["path"].endswith("test_fails"))
    assert "assert (6 * 7) == 43" in failed["log_excerpt"]


def test_kcidb_schema_rejects_what_the_export_must_not_write(runs: Path) -> None:
    """The broken variant: the validation the exporter relies on is live."""
    data = kcidb.export(record.read(runs / "whole"))
    data["tests"][0]["status"] = "XFAIL"
    with pytest.raises(Exception, match="XFAIL"):
        schema.LATEST.validate(data)


def test_bad_catalog_for_ci_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(
        textwrap.dedent("""
        [kernels.x]
        kind = "nope"
    """)
    )
    proc = _matrix(tmp_path, "ci", "github", "--catalog", "bad.toml")
    assert proc.returncode == 2 and "kind 'nope'" in proc.stderr
