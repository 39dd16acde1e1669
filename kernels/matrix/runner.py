# SPDX-License-Identifier: GPL-2.0-only
"""Running the suite on one kernel: fetch it, boot it (or use the host), collect the results.

The matrix runs this once per kernel in parallel workers; `pytest --kernel` runs it once.
The guest pytest is the suite's own, called by absolute path (the guest PATH is reset) from
the caller's working directory (the guest sees the same paths), with this environment:

- NETREGRESS_KERNEL / _VERSION / _RELEASE: name, exact build and `uname -r`, for expectations;
- NETREGRESS_EXPECTATIONS: the expectations file, if not the packaged one;
- NETREGRESS_PROGRESS: the log of started tests (reportlog.py), so a crash blames the one
  that was running;
- NETREGRESS_ARTIFACTS: netns' evidence folder, inside the output share so it comes back;
- NETREGRESS_PHASES: the timing log `-p kernels.vm.phases` writes (scripts/bench-vm reads it);
- NETREGRESS_ACCEL: how the kernel runs (kvm, tcg, host), so the guest's reports name it;
- NETREGRESS_IN_VM=1: inside a guest (not the running kernel's host run), whose root
  namespace may be changed: the VM is thrown away;
- NETREGRESS_EMULATED=tcg: inside a TCG guest, so timing-sensitive code widens tolerances.
"""

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernels.acquire.catalog import KernelSpec
from kernels.acquire.fetch import fetch
from kernels.acquire.kernel import BootableKernel
from kernels.matrix import bytecode, reportlog
from kernels.matrix.results import Outcome, TestResult
from kernels.matrix.schedule import Timing, measured
from kernels.progress import Status
from kernels.vm import phases
from kernels.vm.accel import choose_accel
from kernels.vm.console import Crash, tail
from kernels.vm.initramfs import GUEST_OUT
from kernels.vm.launcher import Boot, Gate, GuestCommand, Launcher
from kernels.vm.procs import Children
from netregress.errors import NetregressError
from netregress.session import KernelUnderTest

# What the suite's topologies use; preloaded so the first test does not pay for autoloading.
GUEST_MODULES = (
    "veth", "bridge", "vxlan", "geneve", "ipip", "ip_gre", "ip6_tunnel", "ip6_gre", "sit",
    "tun", "dummy", "macvlan", "ipvlan", "8021q", "ifb", "sch_netem", "sch_tbf", "sch_htb",
    "sch_fq", "nf_tables", "nft_chain_nat", "nf_conntrack", "wireguard",
)  # fmt: skip
PYTEST_USAGE_ERRORS = {2: "interrupted", 3: "internal error", 4: "usage error"}
# Plugins a guest does without unless the arguments use them: hypothesis' imports all of
# hypothesis for its end-of-session summary (1 s on the host, 15–30 s under TCG).
GUEST_SKIPPED_PLUGINS = {"hypothesispytest": "--hypothesis"}


@dataclass(frozen=True)
class RunOptions:
    """How to run: pytest arguments plus VM knobs shared by every kernel of a run."""

    pytest_args: list[str]
    cwd: Path = field(default_factory=Path.cwd)
    accel: str = "auto"
    timeout: float = 1800.0
    expectations: Path | None = None


@dataclass
class KernelRun:
    """One kernel's outcome. `problem` is a crash, hang, or a reason it could not run."""

    name: str
    out_dir: Path
    kernel: BootableKernel | None = None
    results: list[TestResult] = field(default_factory=list)
    problem: Crash | None = None
    accel: str = "host"
    boot_seconds: float | None = None
    total_seconds: float = 0.0
    timing: Timing | None = None  # a guest's, from its phase log, for the next run's order

    def under_test(self) -> KernelUnderTest | None:
        """The kernel as the reports name it; None when it never was fetched."""
        return None if self.kernel is None else judged(self.kernel, self.accel)


def judged(kernel: BootableKernel, accel: str) -> KernelUnderTest:
    """A fetched kernel running with `accel` ("kvm", "tcg", "host"), as the reports name it."""
    return KernelUnderTest(kernel.name, kernel.release, kernel.version, accel)


def _pytest_argv(options: RunOptions, out: str) -> list[str]:
    """The guest pytest; `out` is the output dir as it sees it. The host reads its report log;
    its JUnit file is for readers only (it keeps what cases record_testsuite_property).
    Our plugins are named explicitly: the guest side of the kernels plugin (expectations, the
    started log crash blame reads) must load for a selection outside this checkout too."""
    return [
        sys.executable, "-m", "pytest", "-p", "netregress.plugins", *options.pytest_args,
        f"--junitxml={out}/junit.xml", *reportlog.pytest_args(out), "-p", "no:cacheprovider",
        "-p", "kernels.vm.phases", "-p", "kernels.vm.gate",
    ]  # fmt: skip


def _skipped_plugins(options: RunOptions) -> list[str]:
    """`-p no:NAME` for each plugin of GUEST_SKIPPED_PLUGINS no argument asks for."""
    return [
        arg for name, prefix in GUEST_SKIPPED_PLUGINS.items()
        if not any(given.startswith(prefix) for given in options.pytest_args)
        for arg in ("-p", f"no:{name}")
    ]  # fmt: skip


def guest_env(kernel: BootableKernel, options: RunOptions, accel: str, out: str) -> dict[str, str]:
    """The guest's environment; `out` is the output dir as the guest sees it."""
    env = {
        "NETREGRESS_KERNEL": kernel.name,
        "NETREGRESS_KERNEL_VERSION": kernel.version,
        "NETREGRESS_KERNEL_RELEASE": kernel.release,
        "NETREGRESS_ACCEL": accel,
        "NETREGRESS_PROGRESS": f"{out}/{reportlog.PROGRESS_LOG}",
        "NETREGRESS_ARTIFACTS": f"{out}/artifacts",
        phases.ENV: f"{out}/{phases.FILE}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if options.expectations is not None:
        env["NETREGRESS_EXPECTATIONS"] = str(options.expectations.resolve())
    if accel != "host":
        env["NETREGRESS_IN_VM"] = "1"  # the root namespace belongs to a throwaway guest
    if accel == "tcg":
        env["NETREGRESS_EMULATED"] = "tcg"
    return env


def _on_host(
    kernel: BootableKernel, options: RunOptions, run: KernelRun, children: Children
) -> int | None:
    """The running kernel: the suite runs directly on the host, same contract as a guest."""
    argv = _pytest_argv(options, str(run.out_dir))
    (run.out_dir / phases.FILE).unlink(missing_ok=True)
    env = {**os.environ, **guest_env(kernel, options, "host", str(run.out_dir))}
    start = time.monotonic()
    with (run.out_dir / "console.log").open("wb") as log:
        proc = children.spawn(argv, log, cwd=options.cwd, env=env)
        try:
            status = proc.wait(options.timeout)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            children.stop(proc)
    run.total_seconds = time.monotonic() - start
    if status is None:
        run.problem = Crash(f"timeout: pytest ran longer than {options.timeout:.0f} s", "")
    return status


def _in_vm(
    kernel: BootableKernel,
    options: RunOptions,
    run: KernelRun,
    launcher: Launcher,
    status: Status,
    gate: Gate | None,
) -> int | None:
    accel = choose_accel(options.accel, kernel, launcher, status)
    run.accel = accel
    bytecode.precompile()
    command = GuestCommand(
        argv=[*_pytest_argv(options, GUEST_OUT), *_skipped_plugins(options)],
        cwd=options.cwd,
        env=guest_env(kernel, options, accel, GUEST_OUT),
        modules=GUEST_MODULES,
    )
    boot = Boot(kernel, command, run.out_dir, accel, options.timeout, gate)
    result = launcher.run(boot, status)
    run.boot_seconds, run.total_seconds = result.boot_seconds, result.total_seconds
    run.timing = measured(phases.read(run.out_dir / phases.FILE))
    run.problem = result.crash
    return result.exit_status


def run_kernel(
    spec: KernelSpec,
    options: RunOptions,
    out_dir: Path,
    launcher: Launcher,
    children: Children,
    status: Status,
    gate: Gate | None = None,
) -> KernelRun:
    """Run the selected tests on one kernel; every failure mode ends in a KernelRun. A guest
    with a `gate` may boot ahead of its turn (kernels/matrix/slots.py)."""
    run = KernelRun(name=spec.name, out_dir=out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("junit.xml", reportlog.REPORT_LOG, reportlog.PROGRESS_LOG):
        (out_dir / stale).unlink(missing_ok=True)
    stop = threading.Event()
    follower = threading.Thread(target=reportlog.follow, args=(out_dir, status, stop), daemon=True)
    follower.start()
    try:
        status("fetching")
        run.kernel = fetch(spec, status)
        if run.kernel.image is None:
            status("running on the host")
            exit_status = _on_host(run.kernel, options, run, children)
        else:
            exit_status = _in_vm(run.kernel, options, run, launcher, status, gate)
    except NetregressError as exc:  # a KernelsError, or the process core refusing to spawn
        run.problem = Crash(f"cannot run: {exc}", "")
        return run
    finally:
        stop.set()
        follower.join()
    _collect(run, exit_status)
    return run


def _collect(run: KernelRun, exit_status: int | None) -> None:
    """Results from the guest's report log; when its pytest did not finish (a crash), the tests
    that did, and the one that was running blamed."""
    log = reportlog.read(run.out_dir)
    run.results = log.results()
    if log.complete:
        return
    if run.problem is None:
        what = PYTEST_USAGE_ERRORS.get(exit_status or 0, f"exit status {exit_status}")
        console = run.out_dir / "console.log"
        text = console.read_text(errors="replace") if console.exists() else ""
        run.problem = Crash(f"pytest did not finish ({what})", tail(text))
    if log.running is not None:
        crash = TestResult(log.running, Outcome.CRASH, run.problem.reason, run.problem.excerpt)
        run.results.append(crash)
