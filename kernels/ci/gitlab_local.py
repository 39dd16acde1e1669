# SPDX-License-Identifier: GPL-2.0-only
"""The generated GitLab pipeline, run end to end by gitlab-ci-local, against one whole run.

Why gitlab-ci-local and not a hand-made imitation: it reads the real .gitlab-ci.yml (stages,
`parallel:matrix`, `cache:`, `artifacts:`, `when: always`) the way GitLab does and runs every
job in a copy of the checkout of its own (`--shell-isolation`), handing artifacts from the
shard jobs to the merge job; a mistake in the file shows here before a runner sees it.
`--force-shell-executor` runs the jobs in this machine's shell instead of the `debian:12`
image (no container engine here): what a GitLab shell runner does with the same file.

The pipeline runs in a clone of the checkout's HEAD (committed work only, as a runner would
see it); a single unsharded `scripts/matrix` of the same selection runs in the same clone,
and every verdict file of the merge must equal its own (kernels.ci.compare).
"""

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kernels.ci.compare import differences, verdict_count
from kernels.errors import KernelsError
from kernels.matrix.ci_workflow import MERGED_DIR, gitlab
from kernels.paths import REPO_ROOT, cache_root
from netregress import process

# Pinned: 4.72.0 is the newest release that runs on Node.js 20 (later ones need Node 22's
# Set methods and fail at start with "union is not a function").
GITLAB_CI_LOCAL = "gitlab-ci-local@4.72.0"
# gitlab-ci-local's line per finished job: `matrix-shard: [1] finished in 3.55 min  FAIL 1`.
_FINISHED = re.compile(r"^(?P<job>\S.*?) +finished in (?P<time>[\d.]+ \w+)(?P<failed> +FAIL.*)?$",
                       re.MULTILINE)  # fmt: skip
_NOT_A_JOB = "parsing and downloads"


@dataclass
class Outcome:
    """What `scripts/ci-local gitlab` reports."""

    exit_status: int
    seconds: float
    job_times: dict[str, str]
    single_seconds: float
    cells: int
    differences: list[str]


def finished_jobs(log: str) -> dict[str, str]:
    """Each job's (and the pipeline's) time from gitlab-ci-local's output, "(failed)" marked."""
    return {
        m["job"]: m["time"] + (" (failed)" if m["failed"] else "")
        for m in _FINISHED.finditer(log)
        if m["job"] != _NOT_A_JOB
    }


def _tool() -> Path:
    """gitlab-ci-local, installed once with npm into the netregress tool cache."""
    if shutil.which("npm") is None or shutil.which("rsync") is None:
        raise KernelsError("gitlab-ci-local needs npm (Node.js 20+) and rsync: "
                           "apt-get install nodejs npm rsync")  # fmt: skip
    prefix = cache_root().parent / "tools" / GITLAB_CI_LOCAL.replace("@", "-")
    binary = prefix / "node_modules/.bin/gitlab-ci-local"
    if not binary.exists():
        subprocess.run(["npm", "install", "--no-fund", "--no-audit", "--prefix", str(prefix),
                        GITLAB_CI_LOCAL], check=True)  # fmt: skip
    return binary


def _clone(work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(work)], check=True)


def run(kernels: list[str], shards: int, selection: list[str], out: Path, keep: bool) -> Outcome:
    """Run the pipeline in `out/pipeline`, the single run into `out/single`, compare; unless
    `keep`, drop the jobs' copies of the checkout and the caches (a virtualenv each, ~2 GB)
    and keep the results, the shards and the logs."""
    binary = _tool()
    work = out / "pipeline"
    _clone(work)
    (work / ".gitlab-ci.yml").write_text(gitlab(kernels, shards, selection))
    log = out / "gitlab-ci-local.log"
    started = time.monotonic()
    with log.open("w") as sink:
        proc = process.run([str(binary), "--force-shell-executor", "--shell-isolation"],
                           cwd=work, stdout=sink, stderr=subprocess.STDOUT)  # fmt: skip
    seconds = time.monotonic() - started
    job_times = finished_jobs(log.read_text())
    single = out / "single"
    started = time.monotonic()
    # This checkout's virtualenv, the clone's code (the clone has no virtualenv of its own).
    process.run([str(REPO_ROOT / "scripts/matrix"), "--kernels", ",".join(kernels),
                 "--output", str(single), *selection], cwd=work,
                env={**os.environ, "PYTHONPATH": str(work)})  # fmt: skip
    single_seconds = time.monotonic() - started
    if not keep:
        for bulk in ("builds", "cache"):
            shutil.rmtree(work / ".gitlab-ci-local" / bulk, ignore_errors=True)
    merged = work / MERGED_DIR
    if not (merged / "matrix.json").is_file() or not (single / "matrix.json").is_file():
        found = [f"no matrix.json in {merged if proc.returncode == 0 else log}"]
        return Outcome(proc.returncode or 1, seconds, job_times, single_seconds, 0, found)
    return Outcome(proc.returncode, seconds, job_times, single_seconds,
                   verdict_count(single), differences(merged, single))  # fmt: skip
