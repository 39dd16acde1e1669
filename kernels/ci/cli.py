# SPDX-License-Identifier: GPL-2.0-only
"""scripts/ci-local: run the generated CI workflows on this machine, for real (docs/ci.md).

    scripts/ci-local gitlab [--kernels A,B] [--shards N] [--keep] [--output DIR] [SELECTION...]
    scripts/ci-local github [--kernels A] [--setup-only] [--warm-virtiofsd BINARY] [--keep]
                            [--output DIR] [SELECTION...]

gitlab: the .gitlab-ci.yml that `scripts/matrix ci gitlab` writes for the selection, run by
gitlab-ci-local (shell executor, every job in its own copy of the checkout); then one unsharded
`scripts/matrix` of the same selection; the merged matrix.md/json, JUnit and KTAP must equal
its own, timings aside. github: the shard job of the workflow `scripts/matrix ci github` writes
for the selection, its `run:` steps one after the other on a fresh Debian 12 root filesystem
(mmdebstrap), the first test included unless --setup-only.

Both run the HEAD commit (what a runner checks out), as root, and take minutes: opt-in, not
part of scripts/test. Exit status 0 when everything held, 1 when a job, a step or the
comparison failed, 2 on bad usage.
"""

import argparse
import shutil
import sys
import time
from pathlib import Path

from kernels.acquire.catalog import load_catalog
from kernels.ci import clean_root, gitlab_local
from kernels.errors import KernelsError
from kernels.matrix.ci_workflow import github
from kernels.paths import cache_root
from netregress.errors import run_cli

GITLAB_KERNELS = "bookworm-6.1,running"
GITHUB_KERNELS = "bookworm-6.1"
DEFAULT_SELECTION = ["tests/cases/test_c07_tunl0_fallback.py",
                     "tests/cases/test_c13_veth_csum_offload.py"]  # fmt: skip


def _kernels(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    catalog = load_catalog()
    unknown = [name for name in names if name not in catalog]
    if not names or unknown:
        raise KernelsError(f"--kernels: {', '.join(unknown) or 'none given'}: "
                           f"name kernels of the catalog ({', '.join(catalog)})")  # fmt: skip
    return names


def _output(value: Path | None, engine: str) -> Path:
    out = value or cache_root().parent / "ci-local" / f"{engine}-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    return out.resolve()


def _gitlab(args: argparse.Namespace, selection: list[str]) -> int:
    kernels = _kernels(args.kernels or GITLAB_KERNELS)
    if args.shards < 1:
        raise KernelsError("--shards must be 1 or more")
    out = _output(args.output, "gitlab")
    result = gitlab_local.run(kernels, args.shards, selection, out, args.keep)
    print(
        f"ci-local gitlab: gitlab-ci-local exited {result.exit_status} "
        f"after {result.seconds:.0f}s (log: {out / 'gitlab-ci-local.log'})"
    )
    for job, took in result.job_times.items():
        print(f"  {job:<24} {took}")
    print(f"  single unsharded run     {result.single_seconds:.0f}s")
    for problem in result.differences:
        print(f"  DIFFERS: {problem}")
    if result.exit_status == 0 and not result.differences:
        print(
            f"ci-local gitlab: the merged matrix equals the single run "
            f"({result.cells} verdicts; {out})"
        )
        return 0
    return 1


def _github(args: argparse.Namespace, selection: list[str]) -> int:
    kernels = _kernels(args.kernels or GITHUB_KERNELS)
    if args.warm_virtiofsd is not None and not args.warm_virtiofsd.is_file():
        raise KernelsError(f"--warm-virtiofsd: {args.warm_virtiofsd} is no file")
    out = _output(args.output, "github")
    workflow = github(kernels, 1, selection)
    (out / "kernel-matrix.yml").write_text(workflow)
    root = out / "root"
    log = out / "steps.log"
    done = clean_root.run(
        workflow,
        "shard",
        {"shard": "1"},
        root,
        log,
        stop_before=clean_root.TEST_STEP if args.setup_only else None,
        virtiofsd=args.warm_virtiofsd,
    )
    for step in done:
        print(f"  exit {step.exit_status:<3} {step.seconds:7.0f}s  {step.name}")
    left = clean_root.mounts_under(root)
    if left:
        raise KernelsError(f"mounts left under {root}: {', '.join(left)}")
    if not args.keep:
        shutil.rmtree(root)
    failed = any(step.exit_status for step in done)
    print(
        f"ci-local github: {'a step failed' if failed else 'every step passed'} "
        f"(log: {log}; workflow: {out / 'kernel-matrix.yml'})"
    )
    return 1 if failed else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scripts/ci-local",
        description="Run the generated CI workflows on this machine, for real (docs/ci.md). "
        "Arguments after the options are the pytest selection "
        f"(default: {' '.join(DEFAULT_SELECTION)}).",
    )
    sub = parser.add_subparsers(dest="engine", required=True)
    gitlab = sub.add_parser("gitlab", help="the GitLab pipeline under gitlab-ci-local, "
                            "compared with one unsharded run")  # fmt: skip
    gitlab.add_argument("--kernels", metavar="A,B", help=f"default: {GITLAB_KERNELS}")
    gitlab.add_argument("--shards", type=int, default=2, metavar="N", help="default: 2")
    github_cmd = sub.add_parser("github", help="the GitHub shard job's steps on a fresh "
                                "Debian 12 root filesystem")  # fmt: skip
    github_cmd.add_argument("--kernels", metavar="A,B", help=f"default: {GITHUB_KERNELS}")
    github_cmd.add_argument("--setup-only", action="store_true",
                            help="stop before the step that runs the tests")  # fmt: skip
    github_cmd.add_argument("--keep", action="store_true",
                            help="keep the root filesystem (OUTPUT/root)")  # fmt: skip
    github_cmd.add_argument("--warm-virtiofsd", type=Path, metavar="BINARY",
                            help="a virtiofsd built on Debian 12, restored as the "
                            "workflow's virtiofsd cache would be (default: cold: built "
                            "in the job)")  # fmt: skip
    gitlab.add_argument("--keep", action="store_true",
                        help="keep the jobs' copies of the checkout and the caches")  # fmt: skip
    for command in (gitlab, github_cmd):
        command.add_argument("--output", type=Path, metavar="DIR",
                             help="default: a new folder under the netregress cache")  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> int:
    args, selection = _parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    selection = [arg for arg in selection if arg != "--"] or DEFAULT_SELECTION
    body = _gitlab if args.engine == "gitlab" else _github
    return run_cli("ci-local", lambda: body(args, selection), status=2)


if __name__ == "__main__":
    sys.exit(main())
