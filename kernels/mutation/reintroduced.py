# SPDX-License-Identifier: GPL-2.0-only
"""The re-introduced-bug check: C01 must fail on 6.1 + the 2019 bug patch and pass on stock 6.1.

Why: a regression test is only worth something if it fails on the bug. This is a mutation
campaign of one mutant (kernels/mutants/tcp-c01-fragment-2019-wqueue-limit.patch) judged by
the C01 case: the stock build is the control and must pass, the patched build must be
killed, and the kill must repeat. Builds share one out-of-tree dir, so after a cold build of
the stock kernel the patched one is an incremental rebuild of one file. Too slow for a cold
CI machine (a cold build is tens of minutes on 2 cores); `scripts/test` runs it when the
build dir is already cached, and `scripts/check-reintroduced-bug` runs it anywhere.
"""

import argparse
import sys
import time

from kernels.acquire.from_source.builder import BuildRequest, BuiltKernel, build
from kernels.acquire.from_source.source import debian_source
from kernels.bisect.c01 import CASE, PACKAGE, PATCH
from kernels.bisect.vmtest import add_run_options, run_tests
from kernels.matrix.runner import KernelRun
from kernels.mutation.campaign import Campaign, run_campaign
from kernels.mutation.mutant import read_mutant
from kernels.mutation.report import markdown
from kernels.paths import cache_dir
from netregress.errors import run_cli


def _say(message: str) -> None:
    print(f"check: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(
        prog="scripts/check-reintroduced-bug",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    add_run_options(cli, CASE)
    args = cli.parse_args(argv)
    return run_cli("check-reintroduced-bug", lambda: _check(args))


def _check(args: argparse.Namespace) -> int:
    source = debian_source(PACKAGE, _say)

    def builder(request: BuildRequest) -> BuiltKernel:
        request = BuildRequest(request.source, request.patches, name=request.name, jobs=args.jobs)
        return build(request, _say)

    def runner(built: BuiltKernel, tests: list[str]) -> KernelRun:
        return run_tests(
            built, tests, args.accel, lambda message: _say(f"vm: {message}"), out / built.name
        )

    out = cache_dir("runs", "check-reintroduced-bug")
    for stale in (out / "results").glob("*.json"):  # a check always measures afresh
        stale.unlink()
    start = time.monotonic()
    campaign = Campaign(source, [read_mutant(PATCH)], args.pytest_args, out, builder, runner, _say)
    records = run_campaign(campaign)
    print(markdown(records, time.monotonic() - start))
    if records[-1].outcome == "killed":
        print("OK: the tests pass on stock 6.1 and fail on 6.1 with the re-introduced bug")
        return 0
    print(f"NOT PROVEN: the bug went unnoticed ({records[-1].outcome})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
