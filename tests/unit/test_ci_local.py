# SPDX-License-Identifier: GPL-2.0-only
"""scripts/ci-local's parts that need no pipeline: the merged-vs-single comparison (timings
masked, every verdict kept, and a changed verdict caught in each file), and the GitHub job's
`run:` steps as they are taken from the generated workflow. The full runs take minutes and
root (docs/ci.md records them); `scripts/ci-local gitlab|github` repeats them."""

import json
import subprocess
from pathlib import Path

import pytest

from kernels.ci import clean_root, gitlab_local
from kernels.ci.compare import differences, verdict_count
from kernels.errors import KernelsError
from kernels.matrix.ci_workflow import github
from kernels.paths import REPO_ROOT

NODE = "tests/cases/test_x.py::test_y[on]"
MD = """\
# netregress kernel matrix

| kernel | release | version | accel | boot s | total s | pkt tolerance | status |
| --- | --- | --- | --- | --- | --- | --- | --- |
| k1 | 6.1.0 | 6.1.176-1 | tcg | {boot} | 64.2 | - | ok |

| test | k1 |
| --- | --- |
| {node} | {outcome} |
"""
JUNIT = """<?xml version='1.0' encoding='utf-8'?>
<testsuite name="netregress on k1" tests="1" failures="0" time="{time}" timestamp="{stamp}">
  <properties><property name="boot_seconds" value="{boot}" /></properties>
  <testcase classname="tests.cases.test_x" name="test_y[on]" time="{time}">
    <system-out>{out}</system-out>
  </testcase>
</testsuite>
"""


def _write(directory: Path, *, outcome: str = "pass", boot: str = "5.6", time: str = "1.0",
           stamp: str = "2026-01-01T00:00:00", tap: str = "ok 1 x") -> Path:  # fmt: skip
    directory.mkdir(parents=True)
    kernel = {"kernel": "k1", "release": "6.1.0", "boot s": boot, "total s": time,
              "console": str(directory / "k1/console.log")}  # fmt: skip
    tests = {NODE: {"k1": {"outcome": outcome, "message": ""}}}
    matrix = {"kernels": [kernel], "tests": tests, "unexpected": 0}
    (directory / "matrix.json").write_text(json.dumps(matrix))
    (directory / "matrix.md").write_text(MD.format(boot=boot, node=NODE, outcome=outcome))
    out = f"{directory}/k1/console.log {outcome}"
    junit = JUNIT.format(time=time, stamp=stamp, out=out, boot=boot)
    (directory / "junit-k1.xml").write_text(junit)
    (directory / "ktap-k1.tap").write_text(f"KTAP version 1\n1..1\n{tap}\n")
    (directory / "matrix.html").write_text("<html></html>")
    return directory


def test_timings_and_the_output_directory_are_not_differences(tmp_path: Path) -> None:
    single = _write(tmp_path / "single")
    merged = _write(tmp_path / "merged", boot="7.9", time="3.5", stamp="2026-02-02T00:00:00")
    assert differences(merged, single) == []
    assert verdict_count(single) == 1


def test_a_changed_verdict_is_caught_in_every_file(tmp_path: Path) -> None:
    """The comparison's broken variant: one verdict changed, every verdict file reports it."""
    single = _write(tmp_path / "single")
    merged = _write(tmp_path / "merged", outcome="fail", tap="not ok 1 x")
    found = differences(merged, single)
    assert [line.split(":")[0] for line in found] == [
        "matrix.md", "matrix.json", "junit-k1.xml", "ktap-k1.tap"]  # fmt: skip


def test_a_file_only_one_side_wrote_is_a_difference(tmp_path: Path) -> None:
    single = _write(tmp_path / "single")
    merged = _write(tmp_path / "merged")
    (merged / "ktap-k1.tap").unlink()
    (merged / "matrix.html").unlink()
    assert differences(merged, single) == [
        "ktap-k1.tap: written by only one of the two", "matrix.html: missing"]  # fmt: skip


def test_the_github_steps_are_the_workflows_own() -> None:
    """Taken from the generated YAML, in order, the shard filled in; nothing retyped."""
    workflow = github(["bookworm-6.1"], 1, ["tests/cases/test_c13_veth_csum_offload.py"])
    steps = clean_root.run_steps(workflow, "shard", {"shard": "1"})
    names = [name for name, _ in steps]
    assert names == ["Install zstd (cache compression)", "Install", clean_root.TEST_STEP]
    assert steps[1][1] == "scripts/setup --vm"
    assert steps[2][1] == ("scripts/matrix --kernels bookworm-6.1 --shard 1/1 --output shards/1 "
                           "tests/cases/test_c13_veth_csum_offload.py $NIGHTLY_ARGS")  # fmt: skip


def test_an_expression_the_runner_would_fill_is_an_error() -> None:
    workflow = github(["bookworm-6.1"], 1, ["tests/cases"])
    with pytest.raises(KernelsError, match="an expression is left"):
        clean_root.run_steps(workflow, "shard", {})


@pytest.mark.parametrize("argv, message", [
    (["gitlab", "--kernels", "nope"], "--kernels: nope: name kernels of the catalog"),
    (["gitlab", "--shards", "0"], "--shards must be 1 or more"),
])  # fmt: skip
def test_bad_input_is_a_clear_error(argv: list[str], message: str) -> None:
    proc = subprocess.run([str(REPO_ROOT / "scripts/ci-local"), *argv], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"ci-local: {message}"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_job_times_are_read_from_gitlab_ci_locals_output() -> None:
    log = """\
parsing and downloads finished in 251 ms.
matrix-shard: [2] finished in 6.25 min
matrix-shard: [1] > still running...
matrix-shard: [1] finished in 7.1 min  FAIL 1
matrix-merge      finished in 30 s
pipeline finished in 7.65 min
"""
    assert gitlab_local.finished_jobs(log) == {
        "matrix-shard: [2]": "6.25 min",
        "matrix-shard: [1]": "7.1 min (failed)",
        "matrix-merge": "30 s",
        "pipeline": "7.65 min",
    }
