# SPDX-License-Identifier: GPL-2.0-only
"""CI fan-out: the shipped GitHub workflow is what `scripts/matrix ci github` generates from
kernels/matrix.toml today, and both engines' files run one shard per job, then `merge`.
(actionlint checks the GitHub workflow in scripts/test.)"""

import re
import subprocess
from pathlib import Path

import yaml

from kernels.acquire.catalog import load_catalog, select
from kernels.matrix.ci_workflow import github, gitlab
from kernels.paths import REPO_ROOT

SHIPPED = REPO_ROOT / ".github/workflows/kernel-matrix.yml"


def _defaults() -> list[str]:
    return [spec.name for spec in select(load_catalog(), None)]


def test_shipped_github_workflow_is_a_fresh_generation() -> None:
    proc = subprocess.run([str(REPO_ROOT / "scripts/matrix"), "ci", "github"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    regenerate = "scripts/matrix ci github --output .github/workflows/kernel-matrix.yml"
    assert proc.stdout == SHIPPED.read_text(), f"stale workflow: run {regenerate}"


def test_github_runs_every_shard_then_merges() -> None:
    kernels = _defaults()
    workflow = yaml.safe_load(github(kernels, 3, ["tests/cases", "-k", "vxlan or gre"]))
    shard = workflow["jobs"]["shard"]
    assert [entry["shard"] for entry in shard["strategy"]["matrix"]["include"]] == [1, 2, 3]
    commands = [step.get("run", "") for step in shard["steps"]]
    assert "scripts/setup --vm" in commands
    shard_id = "${{ matrix.shard }}"
    assert (f"scripts/matrix --kernels {','.join(kernels)} --shard {shard_id}/3 "
            f"--output shards/{shard_id} tests/cases -k 'vxlan or gre' $NIGHTLY_ARGS"
            ) in commands  # fmt: skip
    nightly = "${{ github.event_name == 'schedule' && '--kernel-pkt-corpus=auto' || '' }}"
    assert shard["env"]["NIGHTLY_ARGS"] == nightly  # the kernel's corpus, nightly only
    merge = workflow["jobs"]["merge"]
    assert merge["needs"] == "shard" and merge["if"] == "always()"
    runs = [step.get("run", "") for step in merge["steps"]]
    assert "scripts/matrix merge --output matrix shards/*" in runs
    assert 'cat matrix/matrix.md >> "$GITHUB_STEP_SUMMARY"' in runs


def test_gitlab_runs_every_shard_then_merges() -> None:
    kernels = _defaults()
    pipeline = yaml.safe_load(gitlab(kernels, len(kernels), ["tests/cases"]))
    shard, merge = pipeline["matrix-shard"], pipeline["matrix-merge"]
    assert pipeline["stages"] == ["matrix", "report"]
    values = shard["parallel"]["matrix"][0]["SHARD"]
    assert values == [str(i) for i in range(1, len(kernels) + 1)]
    command = f"scripts/matrix --kernels {','.join(kernels)} --shard $SHARD/{len(kernels)}"
    assert shard["script"][-1].startswith(f"{command} --output shards/$SHARD")
    assert shard["artifacts"]["when"] == "always"
    assert merge["stage"] == "report" and merge["when"] == "always"
    assert merge["script"][-1] == "scripts/matrix merge --output matrix shards/*"
    assert merge["artifacts"]["reports"]["junit"] == "matrix/junit-*.xml"


def test_ci_writes_the_file_it_is_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "ci" / ".gitlab-ci.yml"
    argv = [str(REPO_ROOT / "scripts/matrix"), "ci", "gitlab", "--shards", "7", "--output",
            str(out)]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    shards = yaml.safe_load(out.read_text())["matrix-shard"]["parallel"]["matrix"][0]["SHARD"]
    assert shards == [str(i) for i in range(1, 8)]


def test_github_hygiene_nightly_cancel_timeouts_caches_report() -> None:
    workflow = yaml.safe_load(SHIPPED.read_text())
    assert workflow["on"]["schedule"] == [{"cron": "17 2 * * *"}]
    assert "workflow_dispatch" in workflow["on"]
    assert workflow["concurrency"]["cancel-in-progress"] is True
    shard, merge = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert shard["timeout-minutes"] and merge["timeout-minutes"]
    names = [step.get("name", step.get("uses")) for step in shard["steps"]]
    caches = [i for i, step in enumerate(shard["steps"]) if "actions/cache" in step.get("uses", "")]
    # zstd first (the cache's compression), the caches before the install that fills them.
    assert names.index("Install zstd (cache compression)") < caches[0]
    assert caches[-1] < names.index("Install")
    paths = " ".join(shard["steps"][i]["with"]["path"] for i in caches)
    assert "~/.cargo/bin/virtiofsd" in paths and ".venv" in paths
    assert "~/.cache/netregress/kernels/debian" in paths
    report = [step for step in merge["steps"] if step.get("name") == "Publish the JUnit report"]
    action, _, ref = report[0]["uses"].partition("@")
    assert action == "mikepenz/action-junit-report" and len(ref) == 40  # pinned by commit
    assert report[0]["with"]["report_paths"] == "matrix/junit-*.xml"
    assert merge["permissions"]["checks"] == "write"


def test_gitlab_caches_inside_the_project_and_is_interruptible() -> None:
    pipeline = yaml.safe_load(gitlab(["bookworm-6.1", "running"], 2, ["tests/cases"]))
    shard = pipeline["matrix-shard"]
    assert shard["before_script"] == [
        'export XDG_CACHE_HOME="$PWD/.cache" CARGO_HOME="$PWD/.cargo" NIGHTLY_ARGS=',
        'if [ "$CI_PIPELINE_SOURCE" = schedule ]; then NIGHTLY_ARGS=--kernel-pkt-corpus=auto; fi',
    ]
    paths = [path for cache in shard["cache"] for path in cache["paths"]]
    assert paths == [".venv/", ".cargo/bin/virtiofsd", ".cache/netregress/kernels/debian/",
                     ".cache/netregress/kernels/apt/"]  # fmt: skip
    assert pipeline["matrix-merge"]["cache"]["policy"] == "pull"
    assert shard["interruptible"] and pipeline["matrix-merge"]["interruptible"]


def test_ci_kernels_must_be_catalog_names() -> None:
    argv = [str(REPO_ROOT / "scripts/matrix"), "ci", "gitlab", "--kernels", "running,/boot/x"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--kernels: /boot/x not in" in proc.stderr and "Traceback" not in proc.stderr


def _gitlab_minutes(duration: str) -> int:
    number, unit = int(duration[:-1]), duration[-1]
    return number * {"h": 60, "m": 1}[unit]


def test_docs_state_the_generated_timeouts() -> None:
    """docs/ci.md's timeouts are the ones the generator writes (the page once said 120 min
    where the workflow had 360 on a schedule, and GitLab kept 2 h for hours of corpus)."""
    doc = (REPO_ROOT / "docs/ci.md").read_text()
    row = re.search(r"^\| timeouts \| (.*) \| (.*) \|$", doc, re.M)
    assert row is not None, "docs/ci.md has no timeouts row"
    said_github = [int(n) for n in re.findall(r"(\d+) min\b", row[1])]
    said_gitlab = [int(n) for n in re.findall(r"(\d+) min\b", row[2])]
    workflow = yaml.safe_load(github(["running"], 1, ["tests/cases"]))["jobs"]
    scheduled, pushed = re.findall(r"&& (\d+) \|\| (\d+)", workflow["shard"]["timeout-minutes"])[0]
    assert said_github == [int(scheduled), int(pushed), workflow["merge"]["timeout-minutes"]]
    pipeline = yaml.safe_load(gitlab(["running"], 1, ["tests/cases"]))
    assert said_gitlab == [_gitlab_minutes(pipeline[job]["timeout"])
                           for job in ("matrix-shard", "matrix-merge")]  # fmt: skip
    nightly = re.search(r"GitHub's shard timeout is (\d+) minutes on a schedule, (\d+) on a push"
                        r"\.\s+GitLab's is (\d+) minutes", doc)  # fmt: skip
    assert nightly is not None, "docs/ci.md's nightly section lost its timeouts"
    assert nightly.groups() == (scheduled, pushed, str(said_gitlab[0]))
