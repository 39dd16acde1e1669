# SPDX-License-Identifier: GPL-2.0-only
"""Running selected tests on a kernel we just built, through the matrix's own runner.

Why the runner API and not `pytest --kernel` in a subprocess: callers (bisect, the
re-introduced-bug check) must tell a failed test from a crashed or hung kernel, which the
runner's `KernelRun` keeps apart and a replayed pytest exit status does not.
"""

import argparse
import os
from pathlib import Path

from kernels.acquire.catalog import PathKernel
from kernels.acquire.from_source.builder import BuiltKernel
from kernels.matrix.results import UNEXPECTED
from kernels.matrix.runner import KernelRun, RunOptions, run_kernel
from kernels.paths import REPO_ROOT, cache_dir
from kernels.progress import Status
from kernels.vm.session import vm_session


def add_run_options(cli: argparse.ArgumentParser, default_tests: str | None = None) -> None:
    """The options every command that builds, boots and tests shares, and its test selection.

    `default_tests`: what runs when the user selects nothing; None makes a selection required.
    """
    cli.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="make -j (default: all CPUs; make runs niced)",
    )
    add_accel_option(cli)
    cli.add_argument("pytest_args", nargs="*" if default_tests else "+",
                     default=[default_tests] if default_tests else None, metavar="PYTEST_ARGS",
                     help="after --: the tests (node ids, files, -k EXPR)"
                     + (f"; default: {default_tests}" if default_tests else ""))  # fmt: skip


def add_accel_option(cli: argparse.ArgumentParser) -> None:
    """`--accel`, for a command that boots kernels it builds nothing for too."""
    cli.add_argument(
        "--accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="VM acceleration (auto: KVM only if a probe guest boots)",
    )


def run_tests(
    built: BuiltKernel,
    pytest_args: list[str],
    accel: str,
    status: Status,
    out: Path | None = None,
) -> KernelRun:
    """Boot `built` and run `pytest_args` in it; every VM process is stopped afterwards. The
    guest's output goes to `out` (default: the cache's runs/<kernel name>), so two campaigns
    judging the same kernel at once never share a folder."""
    spec = PathKernel(name=built.name, image=built.image, modules=built.modules)
    with vm_session() as vm:
        return run_kernel(
            spec,
            RunOptions(pytest_args=pytest_args, cwd=REPO_ROOT, accel=accel),
            out or cache_dir("runs", built.name),
            vm.launcher,
            vm.children,
            status,
        )


def failures(run: KernelRun) -> list[str]:
    """`nodeid: message` for each failed or crashed test, the run's problem if it had one."""
    lines = [
        f"{r.nodeid}: {r.outcome}: {r.message}" for r in run.results if r.outcome in UNEXPECTED
    ]
    if run.problem is not None:
        lines.append(f"kernel problem: {run.problem.reason}")
    return lines
