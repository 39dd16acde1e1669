"""The re-introduced-bug check: C01 must fail on 6.1 + the 2019 bug patch and pass on stock 6.1.

Why: a regression test is only worth something if it fails on the bug. This builds Debian's
linux-source-6.1 twice in the same out-of-tree dir (stock, then with
kernels/patches/tcp-fragment-2019-wqueue-limit.patch: an incremental rebuild of one file),
runs the C01 case on both in a VM, and prints what each run said. Too slow for default CI
(a cold build is tens of minutes on 2 cores); run it with `scripts/check-reintroduced-bug` or
`tox -e reintroduced-bug`.
"""

import argparse
import sys

from kernels.acquire.from_source.builder import BuildRequest, build
from kernels.acquire.from_source.make import elapsed
from kernels.acquire.from_source.source import debian_source
from kernels.bisect.c01 import CASE, PACKAGE, PATCH
from kernels.bisect.vmtest import add_run_options, failures, run_tests
from kernels.errors import KernelsError
from kernels.matrix.runner import KernelRun


def _say(message: str) -> None:
    print(f"check: {message}", file=sys.stderr, flush=True)


def _report(label: str, run: KernelRun) -> None:
    print(f"--- {label}: kernel {run.kernel.release if run.kernel else '?'} ({run.accel}), "
          f"{elapsed(run.total_seconds)}")  # fmt: skip
    for result in run.results:
        print(f"{result.outcome.upper():6} {result.nodeid}")
        if result.outcome in ("fail", "crash"):
            print("       " + (result.details or result.message).replace("\n", "\n       "))
    if run.problem is not None:
        print(f"kernel problem: {run.problem.reason}")


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(
        prog="check-reintroduced-bug", description=__doc__.splitlines()[0]
    )
    add_run_options(cli, CASE)
    args = cli.parse_args(argv)
    runs: dict[str, KernelRun] = {}
    try:
        source = debian_source(PACKAGE, _say)
        for label, patches in (("stock", ()), ("bug-patched", (PATCH,))):
            request = BuildRequest(source, patches, name=f"linux-6.1-{label}", jobs=args.jobs)
            built = build(request, _say)
            _say(f"built {built.name} ({built.release}) in {elapsed(built.seconds)}")
            runs[label] = run_tests(built, args.pytest_args, args.kernel_accel, _say)
    except KernelsError as exc:
        print(f"check: error: {exc}", file=sys.stderr)
        return 2
    for label, run in runs.items():
        _report(label, run)
    stock_ok = not failures(runs["stock"]) and any(
        r.outcome == "pass" for r in runs["stock"].results
    )
    caught = any(r.outcome == "fail" for r in runs["bug-patched"].results)
    if stock_ok and caught:
        print("OK: the tests pass on stock 6.1 and fail on 6.1 with the re-introduced bug")
        return 0
    print("NOT PROVEN: " + ("stock 6.1 did not pass" if not stock_ok else "the bug went unnoticed"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
