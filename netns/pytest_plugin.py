# SPDX-License-Identifier: GPL-2.0-only
"""pytest integration: fixtures that always clean up, artifacts on failure, a clear summary.

Opt-in: the root conftest.py (or ``-p netregress.plugins``) loads it for this project's runs;
installing the package changes nobody else's pytest. Nothing privileged happens per session:
the fixtures that build namespaces (``ns``, ``ns_factory``, ``topology``) first require the
privilege namespaces need (one clear error, not a traceback) and, once per process, reap what
dead runs left behind. ``@pytest.mark.needs_root("why")`` skips a test, with that reason, unless
it runs as root of the initial namespace (not rootless, see netns/privilege.py). Every test
gets an artifact folder; pcaps and nstat snapshots land there, and the folder is kept (and its
path printed) only when the test fails.
"""

import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from netregress.errors import NetregressError
from netregress.session import ARTIFACTS_ROOT, folder_name, vm_kernel

from . import artifacts, features, privilege, selection, summary
from .errors import FeatureMissing, NotPrivileged
from .namespace import Namespace
from .readiness import ready
from .topology import Network, Topology, build, shapes

_FAILED_KEY = pytest.StashKey[bool]()  # a phase of the test failed: keep its artifacts
_FINISHED = pytest.StashKey[bool]()  # the controller's session ran to its end
_REPORT_FEATURES = ("veth", "bridge", "vxlan", "tun", "dummy", "ipip", "gre", "netem")
# The subsystem markers: the part of the stack a regression in a test would sit in, so a kernel
# developer runs what their patch touches (`pytest -m tunnel`). Every case and every .pkt item
# carries at least one (tests/unit/test_markers.py); a test may carry several.
SUBSYSTEMS = {
    "tcp": "TCP: segments, ACKs, timers and retransmissions, MSS, options, counters",
    "udp": "UDP sockets and datagrams",
    "icmp": "ICMP and ICMPv6 messages and what sockets make of them (errors, path MTU)",
    "tunnel": "IP-in-IP and GRE tunnels and the fallback device tunl0 (VXLAN: `vxlan`)",
    "vxlan": "VXLAN overlays: VTEPs, FDB entries, outer headers",
    "bridge": "the Linux bridge: forwarding, ports, hairpin",
    "netfilter": "iptables/nftables policies and rules, br_netfilter",
    "routing": "routes, nexthops, source address selection, rp_filter",
    "softirq": "receive softirq work: per-CPU backlog, RPS, netdev_budget",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netregress")
    group.addoption(
        "--summary",
        choices=("all", "problems", "none"),
        default="all",
        help="the summary at the end: every case (default; skips grouped by reason, the "
        "broken variants that failed as they must counted in one line), only failures, errors "
        "and skips, or none",
    )
    group.addoption(
        "--record-skips",
        metavar="FILE",
        help="write the node ids of skipped tests to FILE (one per line), e.g. to "
        "re-run what this kernel cannot in a VM kernel that can",
    )
    group.addoption(
        "--record-verdicts",
        metavar="FILE",
        help="write each test's verdict and reason to FILE (JSON: node id -> "
        "outcome, reason), e.g. to compare a rootless run with a root run",
    )
    group.addoption(
        "--artifacts-dir",
        default=os.environ.get("NETREGRESS_ARTIFACTS"),
        help="where failing tests keep pcaps and counter snapshots (default: ./artifacts/<run id>)",
    )
    group.addoption(
        "--keep-passing-pcaps",
        action="store_true",
        help="passing tests keep their pcaps too (up to 4 MB each), so a report "
        "can compare them with another kernel's failing run",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(*features): kernel features the test needs; "
        "skipped with the precise reason when missing",
    )
    config.addinivalue_line(
        "markers",
        "needs_root(why): skipped unless root of the initial "
        "namespace, e.g. needs_root('loads a module')",
    )
    for name, about in SUBSYSTEMS.items():
        config.addinivalue_line("markers", f"{name}: subsystem marker: {about}")
    # xdist's workers of one run share its folder (each test has its own inside); any other
    # session has one of its own. Not the environment's PYTEST_XDIST_TESTRUNUID: a session a
    # test starts inside a worker (pytester) inherits it, and two such sessions running the
    # same script on two workers then removed each other's evidence mid-run.
    # Under the directory pytest was started in, not the rootdir: `--rootdir=docs/examples`
    # (a folder of demo scripts) must not fill a docs folder with pcaps. scripts/netregress
    # starts pytest in the checkout, so its runs still keep them in the checkout's artifacts/.
    worker = getattr(config, "workerinput", None)
    _set_run_dir(config, worker["testrunuid"] if worker else None)


def _set_run_dir(config: pytest.Config, testrunuid: str | None) -> None:
    """The run's evidence folder: --artifacts-dir, else artifacts/ plus xdist's run id (or
    this process's, without xdist)."""
    run_dir = config.getoption("--artifacts-dir") or os.path.join(
        str(config.invocation_params.dir),
        "artifacts",
        testrunuid[:8] if testrunuid else f"run-{os.getpid()}",
    )
    config.stash[ARTIFACTS_ROOT] = Path(run_dir)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's controller: its workers' folder is the run's, which the last line names."""
    _set_run_dir(node.config, node.workerinput["testrunuid"])


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """A bad ``-m``/``-k`` is a usage error here, before xdist starts a worker (its
    ``pytest_sessionstart`` runs last): netns/selection.py."""
    if not hasattr(session.config, "workerinput"):
        selection.check(session.config, SUBSYSTEMS)


def pytest_report_header(config: pytest.Config) -> list[str]:
    if vm_kernel(config):
        return []  # the tests run in a VM; probing this host's kernel would mislead
    if privilege.namespace_problem() is not None:
        return [
            f"netregress: kernel {platform.release()}; this process cannot create "
            f"namespaces (tests that build them error)"
        ]
    where = (
        ""
        if privilege.is_initial_root()
        else (
            " (rootless, in a user namespace: tests that need root in the initial namespace skip)"
        )
    )
    try:
        why_not = {f: features.probe(f) for f in _REPORT_FEATURES}
    except NetregressError as exc:
        return [f"netregress: kernel {platform.release()} (feature probe failed: {exc})"]
    have = [f for f, why in why_not.items() if why is None]
    root_only = [f for f, why in why_not.items() if why and why.startswith(privilege.ROOT_PREFIX)]
    lacking = [f for f in _REPORT_FEATURES if f not in have and f not in root_only]
    return [
        f"netregress: kernel {platform.release()}{where}; has {', '.join(have)}"
        + (f"; lacks {', '.join(lacking)}" if lacking else "")
        + (f"; only for root of the initial namespace: {', '.join(root_only)}" if root_only else "")
    ]


def _artifact_dir(item: pytest.Item) -> Path:
    """The folder *item*'s pcaps and counter snapshots go to (the root is set at configure)."""
    return item.config.stash[ARTIFACTS_ROOT] / folder_name(item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Point artifacts at this test's folder; skip when it needs root of the initial namespace
    and this is not, or when a `needs` feature is missing."""
    folder = _artifact_dir(item)
    shutil.rmtree(folder, ignore_errors=True)
    artifacts.set_current(folder)
    if _PACKET_LINES in sys.modules:
        from .packet_lines import forget

        forget()
    for mark in item.iter_markers("needs_root"):
        reason = privilege.initial_root_reason(str(mark.args[0]) if mark.args else "root-only")
        if reason:
            pytest.skip(reason)
    for mark in item.iter_markers("needs"):
        reason = features.missing_reason(*mark.args)
        if reason:
            pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Turn FeatureMissing into a skip and NotPrivileged into its message alone; keep
    artifacts of failures, drop the rest; a failed assertion's text lists packets a line each."""
    _readable_assertion(call)
    report: pytest.TestReport = yield
    if call.excinfo is not None and call.excinfo.errisinstance(FeatureMissing):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")
    elif call.excinfo is not None and call.excinfo.errisinstance(NotPrivileged):
        report.longrepr = str(call.excinfo.value)
    failed = item.stash.get(_FAILED_KEY, False) or report.failed
    item.stash[_FAILED_KEY] = failed
    folder = _artifact_dir(item)
    if report.when == "teardown":
        artifacts.set_current(None)
        if not failed:
            artifacts.drop_passing(folder, item.config.getoption("--keep-passing-pcaps"))
    elif report.failed and folder.exists() and any(folder.iterdir()):
        report.sections.append(("netregress artifacts", f"pcaps and counters kept in {folder}"))
    return report


_PACKET_LINES = "netns.packet_lines"  # imported by what captured; without it, no packets


def _readable_assertion(call: pytest.CallInfo[None]) -> None:
    """Before pytest writes the report: the packet lists the failed assertion showed on lines
    of their own, no scapy payload bytes (:func:`netns.packet_lines.readable`)."""
    error = None if call.excinfo is None else call.excinfo.value
    if not isinstance(error, AssertionError) or _PACKET_LINES not in sys.modules:
        return
    from .packet_lines import readable

    if error.args and isinstance(error.args[0], str):
        error.args = (readable(error.args[0]), *error.args[1:])


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """A comparison of captured packets (one, or a list) explained with one tcpdump-like line
    per packet, not scapy's repr of every field (netns/packet_lines.py). Without scapy loaded
    no packet exists, so a session that never captured never imports it for this."""
    if "scapy.packet" not in sys.modules:
        return None
    from .packet_lines import explain

    return explain(op, left, right)


_WORST_FIRST = ("error", "failed", "xpassed", "xfailed", "skipped", "passed")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """--record-skips / --record-verdicts: the controller (not xdist workers) writes them."""
    config = session.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if hasattr(config, "workerinput") or reporter is None:
        return
    config.stash[_FINISHED] = True
    if path := config.getoption("--record-skips"):
        ids = sorted({nodeid for nodeid, _, _ in summary.rows(reporter.stats, ("skipped",))})
        Path(path).write_text("".join(f"{nodeid}\n" for nodeid in ids))
    if path := config.getoption("--record-verdicts"):
        verdicts: dict[str, dict[str, str]] = {}
        for nodeid, outcome, reason in summary.rows(reporter.stats, _WORST_FIRST):
            verdicts.setdefault(nodeid, {"outcome": outcome, "reason": reason})
        Path(path).write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The netregress summary (netns/summary.py), then the kernel it ran on."""
    config = terminalreporter.config
    mode = config.getoption("--summary")
    if mode == "none":
        return
    found = summary.summary_rows(config, terminalreporter.stats, summary.OUTCOMES)
    if mode == "problems":  # and the count of proofs, which explains pytest's "N xfailed"
        found = [row for row in found if row.outcome in summary.PROBLEMS or row.proof]
    text = summary.lines(found)
    if not text:
        return
    target = vm_kernel(config)
    where = f"{target.name}, in a VM" if target else platform.release()
    terminalreporter.section(f"netregress summary (kernel {where})")
    for line in text:
        terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's last line, after pytest's count: the HTML page to open (--html) and the
    folder of the failures' pcaps, so a first run ends saying where to look."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not config.stash.get(_FINISHED, False):
        return  # a worker, or a session that never ran (a usage error): no page was written
    html = getattr(config.option, "htmlpath", None)
    line = summary.artifacts_line(
        config.invocation_params.dir, html, config.stash.get(ARTIFACTS_ROOT, None)
    )
    if line:
        reporter.write_line(line)


# --- fixtures ----------------------------------------------------------------------------
@pytest.fixture
def netns_ready(request: pytest.FixtureRequest) -> None:
    """The test builds namespaces: see :func:`ready`."""
    ready(request.config)


@pytest.fixture
def ns(netns_ready: None) -> Iterator[Namespace]:
    """A fresh namespace with lo up, deleted after the test."""
    with Namespace("test") as namespace:
        yield namespace


@pytest.fixture
def ns_factory(netns_ready: None) -> Iterator[Callable[[str], Namespace]]:
    """Make as many namespaces as a test needs; all deleted after it."""
    made: list[Namespace] = []

    def make(label: str = "ns") -> Namespace:
        made.append(Namespace(label))
        return made[-1]

    yield make
    for namespace in reversed(made):
        namespace.close()


@pytest.fixture
def topology(netns_ready: None) -> Iterator[Callable[[Topology], Network]]:
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
