# SPDX-License-Identifier: GPL-2.0-only
"""pytest integration of the kernel matrix, both sides of the VM boundary.

Host side, `pytest --kernel NAME|PATH`: collect as usual, then instead of running the items
here, boot that kernel once, run the same node ids inside, and replay the guest's own pytest
reports (kernels/matrix/reportlog.py) here, so -v, -rA, --junitxml, the tracebacks and the
exit status are those of a local run (the JUnit suite also names the kernel).

Guest side (any run with NETREGRESS_KERNEL set, i.e. started by the matrix or by --kernel):
apply `expectations.toml` as strict xfail for this kernel, and note each test's start in the
progress log (NETREGRESS_PROGRESS) so a crash is pinned on it. A plain host run applies the
expectations too, for the running kernel.
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# No public name: --junitxml's writer, whose suite name and properties say which kernel ran
# the replayed reports (the public record_testsuite_property is a fixture, too late here).
from _pytest.junitxml import xml_key

from kernels import tools
from kernels.acquire.catalog import KernelSpec, load_catalog, lookup
from kernels.acquire.fetch import fetch
from kernels.acquire.kernel import BootableKernel, version_under_test
from kernels.errors import KernelsError
from kernels.matrix import reportlog
from kernels.matrix.expectations import DEFAULT_EXPECTATIONS, expected_failure, load_expectations
from kernels.matrix.replay import replay
from kernels.matrix.runner import KernelRun, RunOptions, run_kernel
from kernels.report.junit import suite_properties
from kernels.report.ktap import KtapWriter
from kernels.vm.procs import run_dir
from kernels.vm.session import vm_session
from netregress.session import VM_KERNEL, GuestHooks, VmKernel


@dataclass
class _HostState:
    spec: KernelSpec
    kernel: BootableKernel


_STATE = pytest.StashKey[_HostState]()
JUNIT_DEFAULT_SUITE = "pytest"  # pytest's junit_suite_name when nobody sets it


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The guest's arguments come from whichever plugins answer (packetdrill, the corpus)."""
    pluginmanager.add_hookspecs(GuestHooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netregress kernels")
    group.addoption(
        "--kernel",
        metavar="NAME|PATH",
        help="run the selected tests inside this kernel's VM (a kernels/matrix.toml name or a "
        "bzImage path)",
    )
    group.addoption(
        "--kernel-accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="VM acceleration (auto: KVM only if a probe guest boots)",
    )
    group.addoption(
        "--kernel-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="give up on the guest (a 'crash') after this long",
    )
    group.addoption(
        "--ktap-file",
        type=Path,
        metavar="PATH",
        help="also write the results as KTAP v1 (what kselftest runners and LAVA read)",
    )


def _say(message: str) -> None:
    print(f"netregress kernels: {message}", file=sys.stderr, flush=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vm: boots kernels in QEMU (needs `scripts/setup --vm`)")
    ktap = config.getoption("--ktap-file", default=None)
    if ktap is not None and not hasattr(config, "workerinput"):
        kernel = os.environ.get("NETREGRESS_KERNEL") or config.getoption("--kernel", default=None)
        title = f"netregress on {kernel or os.uname().release}"
        config.pluginmanager.register(KtapWriter(ktap.resolve(), title), "netregress-ktap")
    wanted = config.getoption("--kernel", default=None)
    if not wanted:
        return
    if getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--kernel runs the tests in one VM: drop -n/--numprocesses")
    try:
        tools.require_root()
        spec = lookup(load_catalog(), wanted)
        kernel = fetch(spec, lambda message: _say(f"{spec.name}: {message}"))
        if kernel.image is not None:
            tools.qemu(), tools.virtiofsd()
    except KernelsError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_STATE] = _HostState(spec, kernel)
    config.stash[VM_KERNEL] = VmKernel(spec.name)  # what the other plugins read


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, None)
    if state is not None:
        kernel = state.kernel
        where = "on the host" if kernel.image is None else "in a VM"
        return [f"kernel: {kernel.name} {kernel.release} ({kernel.version}), {where}"]
    name = os.environ.get("NETREGRESS_KERNEL")
    if not name:
        return []
    version = os.environ.get("NETREGRESS_KERNEL_VERSION")
    emulated = os.environ.get("NETREGRESS_EMULATED")
    line = f"kernel: {name} {os.uname().release} ({version})"
    return [line + (f", emulated: {emulated}" if emulated else "")]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Known kernel differences as strict xfail, for the kernel the tests will run on: a
    guest's (NETREGRESS_KERNEL), or this host's own ("running") in a plain run, so an old
    host shows the same expected failures as its matrix column."""
    if _STATE in config.stash:
        return  # --kernel: the guest applies them
    guest = os.environ.get("NETREGRESS_KERNEL")
    path = Path(os.environ.get("NETREGRESS_EXPECTATIONS") or DEFAULT_EXPECTATIONS)
    try:
        expectations = load_expectations(path)
        version = version_under_test()
    except KernelsError as exc:
        raise pytest.UsageError(str(exc)) from None
    for item in items:
        entry = expected_failure(expectations, item.nodeid, guest or "running", version)
        if entry is not None:
            item.add_marker(pytest.mark.xfail(reason=entry.why, strict=True))


def _guest_args(config: pytest.Config) -> list[str]:
    """What the other plugins say a guest needs to run the items as this host would."""
    return [arg for args in config.hook.pytest_netregress_guest_args(config=config) for arg in args]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """Host side of --kernel: one guest run for all selected items, replayed as reports."""
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return None
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} errors during collection")
    if session.config.option.collectonly or not session.items:
        return True
    options = RunOptions(
        pytest_args=[
            *_rendering(session.config),
            *_guest_args(session.config),
            *(item.nodeid for item in session.items),
        ],
        cwd=session.config.rootpath,
        accel=session.config.getoption("--kernel-accel"),
        timeout=session.config.getoption("--kernel-timeout"),
    )
    out_dir = run_dir(state.spec.name)
    with vm_session() as vm:
        run = run_kernel(
            state.spec,
            options,
            out_dir,
            vm.launcher,
            vm.children,
            lambda message: _say(f"{state.spec.name}: {message}"),
        )
    _say(f"{state.spec.name}: guest output in {out_dir}")
    _junit_suite(session.config, run)
    replay(session, run)
    return True


def _junit_suite(config: pytest.Config, run: KernelRun) -> None:
    """`--junitxml`: the suite says which kernel ran it, as the matrix's JUnit file does (its
    name, unless junit_suite_name was set, and the kernel's properties); the test cases keep
    pytest's classnames, the same as a run on the host."""
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    if xml.suite_name == JUNIT_DEFAULT_SUITE:
        xml.suite_name = f"netregress on {run.name}"
    for name, value in suite_properties(run):
        xml.add_global_property(name, value)


def _rendering(config: pytest.Config) -> list[str]:
    """The host's traceback style, locals and verbosity, for the guest: its pytest renders the
    failures the host then shows (a report travels rendered, not as a live exception)."""
    args = [f"--tb={config.option.tbstyle}"]
    if config.option.showlocals:
        args.append("--showlocals")
    if (verbose := config.get_verbosity()) > 0:
        args.append("-" + "v" * verbose)
    return args


def pytest_runtest_logstart(nodeid: str) -> None:
    """Guest side: note the start, so a crash during this test is pinned on it."""
    path = os.environ.get("NETREGRESS_PROGRESS")
    if path:
        reportlog.mark_started(Path(path), nodeid)
