# SPDX-License-Identifier: GPL-2.0-only
"""`scripts/bench-vm`: what the VM runner costs, per kernel and for the whole matrix.

Measures, under the acceleration the runner would choose:
- bare boot: `qemu -kernel … -initrd <busybox init that powers off>`, no shares, no modules;
- runner `true`: our launcher (virtiofsd ×2, overlay root, modprobes) running `true`;
- pytest: a per-phase table of one guest running the selection (boot, imports, collection,
  calibration, fixture set-up, tests, teardown, finish), from the stamps the guest writes
  itself (kernels/vm/phases.py), plus the slowest test phases;
- with --matrix: the whole matrix's wall time and the same table for every kernel.
Numbers depend on the machine and its load: they belong in reports, never in assertions.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernels import tools
from kernels.acquire.catalog import KernelSpec, RunningKernel, load_catalog, select
from kernels.acquire.fetch import fetch
from kernels.acquire.kernel import BootableKernel
from kernels.cli.matrix import collect
from kernels.matrix.runner import RunOptions, run_kernel
from kernels.paths import REPO_ROOT, cache_dir
from kernels.report import record
from kernels.vm import item_profile, phases
from kernels.vm.accel import choose_accel, print_none
from kernels.vm.cpio import Entry, archive, directory
from kernels.vm.initramfs import BUSYBOX
from kernels.vm.launcher import Accel, Boot, GuestCommand
from kernels.vm.procs import Children
from kernels.vm.qemu import accel_args
from kernels.vm.session import VmSession, vm_session
from netregress import process
from netregress.errors import NetregressError, run_cli

BARE_INIT = "#!/bin/busybox sh\n/bin/busybox reboot -f\n"
DEFAULT_SELECTION = ["tests/unit/test_kernels_guest.py"]


def _bare_boot(kernel: BootableKernel, accel: Accel, children: Children) -> float:
    """Seconds for QEMU to boot the kernel into an init that powers off at once."""
    assert kernel.image is not None
    with tempfile.TemporaryDirectory(dir=cache_dir("run")) as work:
        initrd = Path(work) / "bare.cpio"
        initrd.write_bytes(archive([
            directory("bin"), directory("dev"),
            Entry("bin/busybox", 0o755, BUSYBOX.read_bytes()),
            Entry("init", 0o755, BARE_INIT.encode()),
        ]))  # fmt: skip
        argv = [
            tools.qemu(), "-M", "pc", *accel_args(accel), "-m", "512M", "-nodefaults",
            "-no-reboot", "-display", "none", "-kernel", str(kernel.image),
            "-initrd", str(initrd), "-append", "console=ttyS0 quiet panic=-1",
        ]  # fmt: skip
        start = time.monotonic()
        proc = children.spawn(argv)
        try:
            proc.wait(120)
        finally:
            children.stop(proc)
        return time.monotonic() - start


# Guest phases: (label, stamp that starts it, stamp that ends it), on the guest's clock.
GUEST_PHASES = (
    ("kernel boot → init", None, "kernel-booted"),
    ("init: shares, overlay, early modules", "kernel-booted", "userspace"),
    ("modprobe of the suite's modules", "userspace", "modules-loaded"),
    ("python + pytest core start", "exec", "pytest-core"),
    ("plugin + conftest imports", "pytest-core", "plugins-imported"),
    ("configure + session start (calibration)", "plugins-imported", "configured"),
    ("collection (test module imports)", "configured", "collected"),
    ("booted ahead: waiting for a free slot", "collected", "gate-opened"),
)  # fmt: skip
TEST_PHASES = (("per-test fixture set-up", "setup"), ("test bodies", "call"),
               ("per-test teardown", "teardown"))  # fmt: skip
AFTER_TESTS = (
    ("session finish (JUnit, summary)", "tests-done", "finished"),
    ("python exit", "finished", "exited"),
)  # fmt: skip


def _span(stamps: dict[str, float], first: str | None, last: str) -> float | None:
    begin = 0.0 if first is None else stamps.get(first)
    if first == "exec":  # guest.sh execs pytest right after modprobe: the process started
        begin = stamps.get("modules-loaded", stamps.get("python-start"))  # as the shell
    end = stamps.get(last)
    return None if begin is None or end is None else end - begin


def phase_rows(log: phases.Log, boot: float | None, total: float) -> list[tuple[str, float | None]]:
    """Seconds per phase of one run; `boot` and `total` are the host's (launcher) figures,
    which give the parts the guest cannot time: QEMU start-up and power-off."""
    stamps = log.stamps
    userspace = stamps.get("userspace")
    rows: list[tuple[str, float | None]] = []
    if boot is not None and userspace is not None:
        rows.append(("virtiofsd + QEMU + firmware (host clock)", boot - userspace))
    rows += [(label, _span(stamps, first, last)) for label, first, last in GUEST_PHASES]
    rows += [(label, log.sums.get(when)) for label, when in TEST_PHASES]
    loop = _span(stamps, "gate-opened" if "gate-opened" in stamps else "collected", "tests-done")
    if loop is not None and len(log.sums) == len(TEST_PHASES):
        rows.append(("between tests (reports, result log)", loop - sum(log.sums.values())))
    rows += [(label, _span(stamps, first, last)) for label, first, last in AFTER_TESTS]
    exited = stamps.get("exited")
    if boot is not None and userspace is not None and exited is not None:
        rows.append(("power-off (host clock)", total - (boot - userspace) - exited))
    if "gate-opened" in stamps and exited is not None:  # what it adds to the matrix's wall
        rows.append(("booted ahead: from its turn to its exit", exited - stamps["gate-opened"]))
    return rows


def render(columns: dict[str, list[tuple[str, float | None]]], totals: dict[str, float]) -> str:
    """A phase table: one row per phase, one column per run, seconds with one decimal."""
    labels = list(dict.fromkeys(label for rows in columns.values() for label, _ in rows))
    width = max(len(label) for label in [*labels, "phase"])
    names = list(columns)
    lines = [f"  {'phase':{width}}" + "".join(f" {name:>14}" for name in names)]
    for label in labels:
        cells = [dict(columns[name]).get(label) for name in names]
        lines.append(f"  {label:{width}}" + "".join(
            f" {'-' if c is None else f'{c:.1f}':>14}" for c in cells))  # fmt: skip
    lines.append(f"  {'total':{width}}" + "".join(f" {totals[n]:>14.1f}" for n in names))
    return "\n".join(lines)


def _slowest(log: phases.Log) -> str:
    return "\n".join(f"    {seconds:6.1f} s  {what}" for seconds, what in log.slowest)


def _load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def _pytest_run(spec: KernelSpec, selection: list[str], vm: VmSession, out: Path) -> str:
    collect(selection)  # what the matrix does first (it leaves byte-code for the guests)
    load = _load()
    start = time.monotonic()
    run = run_kernel(spec, RunOptions(selection, cwd=REPO_ROOT), out, vm.launcher, vm.children,
                     print_none)  # fmt: skip
    wall = time.monotonic() - start
    log = phases.read(out / phases.FILE)
    rows = phase_rows(log, run.boot_seconds, run.total_seconds)
    rows.append(("host: fetch, accel, results read", wall - run.total_seconds))
    status = run.problem.reason if run.problem else f"{len(run.results)} results"
    return (
        f"{status}; {load} before, {_load()} after\n"
        f"{render({spec.name: rows}, {spec.name: wall})}\n"
        f"  slowest test phases:\n{_slowest(log)}\n"
        f"  where a test's time goes, by kind of test:\n"
        f"{item_profile.render(log.items)}"
    )


def profiles(folders: list[Path]) -> str:
    """The per-kind table of every guest (or host) run kept under `folders` (matrix result
    folders, `--output` of this command, a mutant's run): no guest is booted."""
    logs = sorted({log for folder in folders for log in folder.rglob(phases.FILE)})
    if not logs:
        raise NetregressError(f"no {phases.FILE} under {', '.join(map(str, folders))}")
    return "\n".join(
        f"{log.parent}:\n{item_profile.render(phases.read(log).items)}" for log in logs
    )


def _matrix(names: list[str], selection: list[str], jobs: int, keep: Path | None) -> str:
    """The matrix as `scripts/matrix` runs it; its wall time and each kernel's phases."""
    with tempfile.TemporaryDirectory(dir=cache_dir("bench")) as scratch:
        out = keep / "matrix" if keep else Path(scratch)
        argv = [sys.executable, "-m", "kernels.cli.matrix", "--kernels", ",".join(names),
                "--jobs", str(jobs), "--output", str(out), *selection]  # fmt: skip
        load = _load()
        start = time.monotonic()
        proc = process.run(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)  # fmt: skip
        wall = time.monotonic() - start
        columns: dict[str, list[tuple[str, float | None]]] = {}
        totals: dict[str, float] = {}
        for entry in record.read(out).entries:
            run = entry.run
            log = phases.read(run.out_dir / phases.FILE)
            columns[run.name] = phase_rows(log, run.boot_seconds, run.total_seconds)
            totals[run.name] = run.total_seconds
    jobs_text = "default jobs" if jobs == 0 else f"{jobs} job(s)"
    return (
        f"matrix of {len(names)} kernels ({jobs_text}): {wall:.0f} s wall, exit status "
        f"{proc.returncode}; {load} before, {_load()} after"
        + (f"; results in {out}" if keep else "")
        + f"\n{render(columns, totals)}"
    )


def bench(args: argparse.Namespace) -> None:
    if args.profile:
        print(profiles(args.profile), flush=True)
        return
    tools.require_root()
    selected = select(load_catalog(), args.kernels)
    specs = [spec for spec in selected if not isinstance(spec, RunningKernel)]
    with vm_session(smp=1) as vm:
        for spec in specs if args.guests else []:
            kernel = fetch(spec, print_none)
            accel = choose_accel(args.accel, kernel, vm.launcher, print_none)
            print(f"{spec.name} ({kernel.version}, {accel}):", flush=True)
            for _ in range(args.repeat):
                bare = _bare_boot(kernel, accel, vm.children)
                with tempfile.TemporaryDirectory(dir=cache_dir("run")) as out:
                    true = GuestCommand(["true"], Path("/"))
                    boot = Boot(kernel, true, Path(out), accel, 300)
                    result = vm.launcher.run(boot, print_none)
                overhead = result.total_seconds - bare
                userspace = result.boot_seconds or 0.0
                print(
                    f"  bare boot {bare:.1f} s; runner `true` {result.total_seconds:.1f} s "
                    f"(userspace at {userspace:.1f} s, overhead {overhead:+.1f} s)",
                    flush=True,
                )
                with tempfile.TemporaryDirectory(dir=cache_dir("bench")) as scratch:
                    kept = args.output / spec.name if args.output else Path(scratch)
                    figures = _pytest_run(spec, args.selection, vm, kept)
                print(f"  pytest {' '.join(args.selection)}: {figures}", flush=True)
        if args.matrix:
            names = [spec.name for spec in selected]
            print(_matrix(names, args.selection, args.matrix_jobs, args.output), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-vm", description=__doc__.split("\n")[0],
                                     allow_abbrev=False)  # fmt: skip
    parser.add_argument("--kernels", action="append", help="kernel names (default: all VM kernels)")
    parser.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="also time the whole matrix (scripts/matrix) on these kernels",
    )
    parser.add_argument(
        "--matrix-jobs",
        type=int,
        default=0,
        metavar="N",
        help="kernels at once for --matrix (default: the matrix's default)",
    )
    parser.add_argument(
        "--no-guests",
        dest="guests",
        action="store_false",
        help="skip the per-kernel boot and pytest figures (with --matrix)",
    )
    parser.add_argument(
        "--profile",
        action="append",
        type=Path,
        metavar="DIR",
        help="boot nothing: print where each test's time went, by kind of test, for the "
        "runs kept under DIR (a matrix's --output, this command's --output); repeatable",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="keep the guests' and the matrix's results here (to compare "
        "verdicts); by default they are deleted",
    )
    parser.epilog = (
        "Other arguments go to pytest unchanged, as with scripts/matrix (default: "
        f"{' '.join(DEFAULT_SELECTION)})."
    )
    args, pytest_args = parser.parse_known_args(argv)
    args.selection = [arg for arg in pytest_args if arg != "--"] or DEFAULT_SELECTION

    def body() -> int:
        bench(args)
        return 0

    return run_cli("bench-vm", body)


if __name__ == "__main__":
    sys.exit(main())
