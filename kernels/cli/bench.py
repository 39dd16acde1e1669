"""`scripts/bench-vm`: what the VM runner costs, per kernel and for the whole matrix.

Measures, under the acceleration the runner would choose:
- bare boot: `qemu -kernel … -initrd <busybox init that powers off>`, no shares, no modules;
- runner `true`: our launcher (virtiofsd ×2, overlay root, modprobes) running `true`;
- pytest: boot → guest userspace, → first test started, and total, for a small selection;
- with --matrix: the same selection on all kernels with 1 job, then with the default jobs.
Numbers depend on the machine and its load: they belong in reports, never in assertions.
"""

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kernels import tools
from kernels.acquire.catalog import KernelSpec, RunningKernel, load_catalog, select
from kernels.acquire.fetch import fetch
from kernels.acquire.kernel import BootableKernel
from kernels.errors import KernelsError
from kernels.matrix.runner import RunOptions, run_kernel
from kernels.paths import REPO_ROOT, cache_dir
from kernels.vm.accel import choose_accel, print_none
from kernels.vm.cpio import Entry, archive, directory
from kernels.vm.initramfs import BUSYBOX
from kernels.vm.launcher import Accel, Boot, GuestCommand
from kernels.vm.procs import Children
from kernels.vm.qemu import InitramfsLauncher, accel_args

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


def _first_file(path: Path, start: float, found: list[float], stop: threading.Event) -> None:
    while not stop.is_set():
        if path.exists():
            found.append(time.monotonic() - start)
            return
        time.sleep(0.05)


def _pytest_run(spec: KernelSpec, selection: list[str], children: Children) -> str:
    out = cache_dir("bench", spec.name)
    launcher = InitramfsLauncher(children, smp=1)
    first: list[float] = []
    stop = threading.Event()
    start = time.monotonic()
    progress = out / "progress.jsonl"
    progress.unlink(missing_ok=True)  # a previous run's file would fake a first test
    watcher = threading.Thread(target=_first_file, args=(progress, start, first, stop))
    watcher.start()
    try:
        run = run_kernel(spec, RunOptions(selection, cwd=REPO_ROOT), out, launcher, children,
                         print_none)  # fmt: skip
    finally:
        stop.set()
        watcher.join()
    boot = f"{run.boot_seconds:.1f}" if run.boot_seconds is not None else "-"
    first_test = f"{first[0]:.1f}" if first else "-"
    status = run.problem.reason if run.problem else f"{len(run.results)} results"
    total = time.monotonic() - start
    return f"userspace {boot} s, →first test {first_test} s, total {total:.1f} s ({status})"


def _matrix_seconds(names: list[str], selection: list[str], jobs: int) -> float:
    with tempfile.TemporaryDirectory(dir=cache_dir("bench")) as out:
        argv = [sys.executable, "-m", "kernels.cli.matrix", "--kernels", ",".join(names),
                "--jobs", str(jobs), "--output", out, *selection]  # fmt: skip
        start = time.monotonic()
        subprocess.run(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.monotonic() - start


def bench(args: argparse.Namespace) -> None:
    tools.require_root()
    specs = [s for s in select(load_catalog(), args.kernels) if not isinstance(s, RunningKernel)]
    children = Children()
    try:
        for spec in specs:
            kernel = fetch(spec, print_none)
            launcher = InitramfsLauncher(children, smp=1)
            accel = choose_accel(args.accel, kernel, launcher, print_none)
            print(f"{spec.name} ({kernel.version}, {accel}):", flush=True)
            for _ in range(args.repeat):
                bare = _bare_boot(kernel, accel, children)
                with tempfile.TemporaryDirectory(dir=cache_dir("run")) as out:
                    true = GuestCommand(["true"], Path("/"))
                    result = launcher.run(Boot(kernel, true, Path(out), accel, 300), print_none)
                overhead = result.total_seconds - bare
                userspace = result.boot_seconds or 0.0
                print(f"  bare boot {bare:.1f} s; runner `true` {result.total_seconds:.1f} s "
                      f"(userspace at {userspace:.1f} s, overhead {overhead:+.1f} s)", flush=True)
                print(f"  pytest {' '.join(args.selection)}: "
                      f"{_pytest_run(spec, args.selection, children)}", flush=True)
        if args.matrix:
            names = [spec.name for spec in specs]
            serial = _matrix_seconds(names, args.selection, 1)
            print(f"matrix of {len(names)} kernels, serial (1 job): {serial:.0f} s", flush=True)
            parallel = _matrix_seconds(names, args.selection, 0)
            print(f"matrix of {len(names)} kernels, parallel (default jobs): {parallel:.0f} s")
    finally:
        children.stop_all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-vm", description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", action="append", help="kernel names (default: all VM kernels)")
    parser.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--matrix", action="store_true",
                        help="also time the matrix, serial vs parallel")
    parser.add_argument("selection", nargs="*", default=DEFAULT_SELECTION,
                        help="pytest selection for the timed runs (default: the guest probe tests)")
    args = parser.parse_args(argv)
    try:
        bench(args)
    except KernelsError as exc:
        print(f"bench-vm: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
