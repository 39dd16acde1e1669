"""pytest integration: fixtures that always clean up, artifacts on failure, a clear summary.

Registered through the ``pytest11`` entry point (and named by the root conftest.py when the
package is not installed). At session start it refuses to run without the privileges
network namespaces need (one clear message, not a traceback per test) and reaps what dead
runs left behind. Every test gets an artifact folder; pcaps and nstat snapshots land there,
and the folder is kept (and its path printed) only when the test fails.
"""

import os
import platform
import shutil
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from . import artifacts, features, reaper
from .errors import FeatureMissing, NetregressError
from .namespace import Namespace
from .topology import Network, Topology, build, shapes

_CAP_NET_ADMIN = 12
_CAP_SYS_ADMIN = 21
_ARTIFACTS_KEY = pytest.StashKey[Path]()
_FAILED_KEY = pytest.StashKey[bool]()  # a phase of the test failed: keep its artifacts
_REPORT_FEATURES = ("veth", "bridge", "vxlan", "tun", "dummy", "ipip", "gre", "netem")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netregress")
    group.addoption("--summary", choices=("all", "problems", "none"), default="all",
                    help="the per-case summary at the end: every case (default), only "
                         "failures and skips, or none")
    group.addoption("--record-skips", metavar="FILE",
                    help="write the node ids of skipped tests to FILE (one per line), e.g. to "
                         "re-run what this kernel cannot in a VM kernel that can")
    group.addoption("--artifacts-dir", default=os.environ.get("NETREGRESS_ARTIFACTS"),
                    help="where failing tests keep pcaps and counter snapshots "
                         "(default: ./artifacts/<run id>)")
    group.addoption("--keep-passing-pcaps", action="store_true",
                    help="passing tests keep their pcaps too (up to 4 MB each), so a report "
                         "can compare them with another kernel's failing run")


def _capabilities() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def privilege_problem() -> str | None:
    """Why this process cannot create network namespaces, or None if it can."""
    caps = _capabilities()
    missing = [name for bit, name in ((_CAP_NET_ADMIN, "CAP_NET_ADMIN"),
                                      (_CAP_SYS_ADMIN, "CAP_SYS_ADMIN")) if not caps >> bit & 1]
    if missing:
        return (f"netregress needs root ({' and '.join(missing)} missing): it creates network "
                f"namespaces. Run it as root, e.g. `sudo scripts/netregress`.")
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*features): kernel features the test needs; "
                                       "skipped with the precise reason when missing")
    problem = privilege_problem()
    if problem:
        raise pytest.UsageError(problem)
    run_dir = config.getoption("--artifacts-dir") or os.path.join(
        str(config.rootpath), "artifacts", os.environ.get("PYTEST_XDIST_TESTRUNUID", "")[:8]
        or f"run-{os.getpid()}")
    config.stash[_ARTIFACTS_KEY] = Path(run_dir)


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        reaped = reaper.reap()
    except NetregressError as exc:
        raise pytest.UsageError(str(exc)) from exc
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reaped and reporter is not None:
        reporter.write_line(f"netregress: reaped {len(reaped)} namespace(s) left by dead runs")


def _vm_kernel(config: pytest.Config) -> str | None:
    """The ``--kernel`` the tests are sent to (kernels plugin), or None: on this kernel."""
    kernel: str | None = config.getoption("kernel", default=None)
    return kernel


def pytest_report_header(config: pytest.Config) -> list[str]:
    if _vm_kernel(config):
        return []  # the tests run in a VM; probing this host's kernel would mislead
    try:
        have = [f for f in _REPORT_FEATURES if features.has(f)]
    except NetregressError as exc:
        return [f"netregress: kernel {platform.release()} (feature probe failed: {exc})"]
    lacking = [f for f in _REPORT_FEATURES if f not in have]
    return [f"netregress: kernel {platform.release()}; has {', '.join(have)}"
            + (f"; lacks {', '.join(lacking)}" if lacking else "")]


def artifact_dir(item: pytest.Item) -> Path:
    """The folder *item*'s pcaps and counter snapshots go to."""
    return item.config.stash[_ARTIFACTS_KEY] / artifacts.folder_name(item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Point artifacts at this test's folder; skip when a `needs` feature is missing."""
    folder = artifact_dir(item)
    shutil.rmtree(folder, ignore_errors=True)
    artifacts.set_current(folder)
    for mark in item.iter_markers("needs"):
        reason = features.missing_reason(*mark.args)
        if reason:
            pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Turn FeatureMissing into a skip; keep artifacts of failures, drop the rest."""
    report: pytest.TestReport = yield
    if call.excinfo is not None and call.excinfo.errisinstance(FeatureMissing):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: {call.excinfo.value}")
    failed = item.stash.get(_FAILED_KEY, False) or report.failed
    item.stash[_FAILED_KEY] = failed
    folder = artifact_dir(item)
    if report.when == "teardown":
        artifacts.set_current(None)
        if not failed:
            artifacts.drop_passing(folder, item.config.getoption("--keep-passing-pcaps"))
    elif report.failed and folder.exists() and any(folder.iterdir()):
        report.sections.append(("netregress artifacts", f"pcaps and counters kept in {folder}"))
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """--record-skips: the controller (not xdist workers) writes every skipped node id."""
    path = session.config.getoption("--record-skips")
    if not path or hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [] if reporter is None else reporter.stats.get("skipped", [])
    ids = sorted({rep.nodeid for rep in skipped if isinstance(rep, pytest.TestReport)})
    Path(path).write_text("".join(f"{nodeid}\n" for nodeid in ids))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per case: outcome, and for skips the precise reason, then the kernel."""
    mode = terminalreporter.config.getoption("--summary")
    if mode == "none":
        return
    outcomes: tuple[str, ...] = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
    if mode == "problems":
        outcomes = outcomes[1:]
    rows: list[tuple[str, str, str]] = []
    for outcome in outcomes:
        for rep in terminalreporter.stats.get(outcome, []):
            if not isinstance(rep, pytest.TestReport):
                continue
            if outcome == "passed" and rep.when != "call":
                continue
            reason = ""
            if outcome == "skipped" and isinstance(rep.longrepr, tuple):
                reason = rep.longrepr[2].removeprefix("Skipped: ")
            elif outcome == "xfailed":
                reason = getattr(rep, "wasxfail", "")
            rows.append((rep.nodeid, outcome, reason))
    if not rows:
        return
    vm_kernel = _vm_kernel(terminalreporter.config)
    where = f"{vm_kernel}, in a VM" if vm_kernel else platform.release()
    terminalreporter.section(f"netregress summary (kernel {where})")
    width = min(max(len(r[0]) for r in rows), 90)
    for nodeid, outcome, reason in sorted(rows):
        terminalreporter.write_line(f"{outcome.upper():8} {nodeid:{width}} {reason}".rstrip())


# --- fixtures ----------------------------------------------------------------------------
@pytest.fixture
def ns() -> Iterator[Namespace]:
    """A fresh namespace with lo up, deleted after the test."""
    with Namespace("test") as namespace:
        yield namespace


@pytest.fixture
def ns_factory() -> Iterator[Callable[[str], Namespace]]:
    """Make as many namespaces as a test needs; all deleted after it."""
    made: list[Namespace] = []

    def make(label: str = "ns") -> Namespace:
        made.append(Namespace(label))
        return made[-1]

    yield make
    for namespace in reversed(made):
        namespace.close()


@pytest.fixture
def topology() -> Iterator[Callable[[Topology], Network]]:
    """``net = topology(shapes.pair())``: build a topology, torn down after the test.

    A topology the kernel cannot build (no ipip, …) makes the test skip with the reason.
    """
    built: list[Network] = []

    def make(topo: Topology) -> Network:
        try:
            built.append(build(topo))
        except FeatureMissing as exc:
            pytest.skip(str(exc))
        return built[-1]

    yield make
    for net in reversed(built):
        net.close()


@pytest.fixture
def veth_pair(topology: Callable[[Topology], Network]) -> Network:
    """The ``pair`` shape: hosts a (10.0.0.1) and b (10.0.0.2) on one veth."""
    return topology(shapes.pair())
