# SPDX-License-Identifier: GPL-2.0-only
"""pytest integration of the kernel matrix, both sides of the VM boundary.

Host side, `pytest --kernel NAME|PATH`: collect as usual, then instead of running the items
here, boot that kernel once, run the same node ids inside, and replay the guest's own pytest
reports (kernels/matrix/reportlog.py) here, so -v, -rA, --junitxml, the tracebacks and the
exit status are those of a local run (the JUnit suite also names the kernel).

Every session, either side: the kernel under test (netregress.session: the --kernel one, a
guest's own, or the running kernel of a plain host run) and the host are named by the terminal
header, report.html's environment table, the JUnit suite's properties and the KTAP header, so
no report can be mistaken for another kernel's.

Guest side (any run with NETREGRESS_KERNEL set, i.e. started by the matrix or by --kernel):
apply `expectations.toml` as strict xfail for this kernel, and note each test's start in the
progress log (NETREGRESS_PROGRESS) so a crash is pinned on it. A plain host run applies the
expectations too, for the running kernel.
"""

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

# No public name: --junitxml's writer, whose suite name and properties say which kernel ran
# the tests (the public record_testsuite_property is a fixture: no session hook can call it).
from _pytest.junitxml import xml_key

from kernels import tools
from kernels.acquire.catalog import KernelSpec, RunningKernel, load_catalog, lookup
from kernels.acquire.fetch import fetch
from kernels.acquire.kernel import BootableKernel, version_under_test
from kernels.errors import KernelsError
from kernels.matrix import reportlog
from kernels.matrix.expectations import DEFAULT_EXPECTATIONS, expected_failure, load_expectations
from kernels.matrix.replay import replay
from kernels.matrix.runner import KernelRun, RunOptions, judged, run_kernel
from kernels.progress import Status
from kernels.report.junit import boot_properties
from kernels.report.ktap import KtapWriter, title
from kernels.vm.accel import choose_accel
from kernels.vm.procs import run_dir
from kernels.vm.session import vm_session
from netregress.errors import NetregressError
from netregress.session import KERNEL_UNDER_TEST, VM_KERNEL, GuestHooks, KernelUnderTest


@dataclass
class _HostState:
    spec: KernelSpec
    kernel: BootableKernel


_STATE = pytest.StashKey[_HostState]()
JUNIT_DEFAULT_SUITE = "pytest"  # pytest's junit_suite_name when nobody sets it
RUNNING = "running"  # kernels/matrix.toml's name of the kernel this machine runs
HOST_PROPERTY = "host"


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


def _status(name: str) -> Status:
    """Progress of the kernel `name` (its fetch, its KVM probe, its guest), on stderr."""
    return lambda message: _say(f"{name}: {message}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vm: boots kernels in QEMU (needs `scripts/setup --vm`)")
    wanted = config.getoption("--kernel", default=None)
    if wanted:
        if getattr(config.option, "numprocesses", None):
            raise pytest.UsageError("--kernel runs the tests in one VM: drop -n/--numprocesses")
        kernel = config.stash[VM_KERNEL] = _sent_to(config, wanted)  # what the others read
    else:
        kernel = _this_kernel()
    config.stash[KERNEL_UNDER_TEST] = kernel
    ktap = config.getoption("--ktap-file", default=None)
    if ktap is not None and not hasattr(config, "workerinput"):
        host = [f"{name}: {value}" for name, value in _host().items()]
        config.pluginmanager.register(
            KtapWriter(ktap.resolve(), [title(kernel), *host]), "netregress-ktap"
        )


def _sent_to(config: pytest.Config, wanted: str) -> KernelUnderTest:
    """--kernel: fetch the kernel and decide how it boots (KVM's probe boot runs once per
    machine), so that the header names the kernel under test whole before its guest starts."""
    try:
        tools.require_root()
        spec = lookup(load_catalog(), wanted)
        kernel = fetch(spec, _status(spec.name))
        accel = "host"
        if kernel.image is not None:
            tools.qemu(), tools.virtiofsd()
            with vm_session() as vm:
                wanted_accel = config.getoption("--kernel-accel")
                accel = choose_accel(wanted_accel, kernel, vm.launcher, _status(spec.name))
    except NetregressError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_STATE] = _HostState(spec, kernel)
    return judged(kernel, accel)


def _this_kernel() -> KernelUnderTest:
    """The kernel this pytest runs on: a guest's, as the runner named it in the guest's
    environment (kernels/matrix/runner.py; a hand-set NETREGRESS_KERNEL runs on the host),
    else this machine's own, the matrix's `running`."""
    name = os.environ.get("NETREGRESS_KERNEL")
    if not name:
        return judged(fetch(RunningKernel(RUNNING), _status(RUNNING)), "host")
    release = os.uname().release  # the guest's own
    version = os.environ.get("NETREGRESS_KERNEL_VERSION") or release
    return KernelUnderTest(name, release, version, os.environ.get("NETREGRESS_ACCEL", "host"))


def _host() -> dict[str, str]:
    """The machine that ran the session, named apart from the kernel under test; nothing
    inside a guest, which knows its own kernel but not the host that booted it."""
    if os.environ.get("NETREGRESS_IN_VM"):
        return {}
    machine = os.uname()
    return {HOST_PROPERTY: f"{machine.sysname} {machine.release} {machine.machine}"}


def pytest_report_header(config: pytest.Config) -> list[str]:
    rows = pytest_netregress_environment(config)
    return [f"{name}: {value}" for name, value in rows.items()]


@pytest.hookimpl(optionalhook=True)
def pytest_netregress_environment(config: pytest.Config) -> dict[str, str]:
    """The kernel under test and, apart, the host: report.html's rows (pytest-metadata's
    "Platform" row is the host's, which alone named no kernel a --kernel run judged), and the
    terminal header's lines."""
    return {"kernel under test": config.stash[KERNEL_UNDER_TEST].words(), **_host()}


def pytest_sessionstart(session: pytest.Session) -> None:
    """`--junitxml`: the suite's properties name the kernel under test and the host, for tools
    (a --kernel run adds the guest's boot time once it ran)."""
    kernel = session.config.stash[KERNEL_UNDER_TEST]
    _junit_properties(session.config, [*kernel.properties(), *_host().items()])


def _junit_properties(config: pytest.Config, properties: Sequence[tuple[str, str]]) -> None:
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        for name, value in properties:
            xml.add_global_property(name, value)


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
        entry = expected_failure(expectations, item.nodeid, guest or RUNNING, version)
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
        accel=session.config.stash[KERNEL_UNDER_TEST].accel,  # decided when configured
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
            _status(state.spec.name),
        )
    _say(f"{state.spec.name}: guest output in {out_dir}")
    _junit_suite(session.config, run)
    replay(session, run)
    return True


def _junit_suite(config: pytest.Config, run: KernelRun) -> None:
    """`--junitxml`: the suite says which kernel ran it, as the matrix's JUnit file does (its
    name, unless junit_suite_name was set; its properties since the session started) and how
    long the guest took to boot; the test cases keep pytest's classnames, the same as a run on
    the host."""
    xml = config.stash.get(xml_key, None)
    if xml is not None and xml.suite_name == JUNIT_DEFAULT_SUITE:
        xml.suite_name = f"netregress on {run.name}"
    _junit_properties(config, boot_properties(run))


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
