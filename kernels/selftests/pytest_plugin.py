# SPDX-License-Identifier: GPL-2.0-only
"""``--kernel-selftests auto|DIR|off``: the kernel's own network shell selftests as items.

Each script the kselftest runner runs (``TEST_PROGS`` of ``tools/testing/selftests/net`` and
its ``forwarding/``) is one item, ``tests/cases/kernel-net.selftests::<script>`` (an anchor
file, as ``kernel-packetdrill.corpus`` is for the packetdrill corpus: node ids that do not
depend on where the tree lives). An item runs its script as that runner would
(kernels/selftests/run.py: its folder, the ``settings`` timeout, exit 4 a skip), contained in
namespaces of its own on a host, and is judged per sub-test (kernels/selftests/verdict.py):
the item fails naming each failed check, and its ``ksft_subtests`` property lists every
sub-test with its verdict (JUnit, the report log, the matrix's cells, a nested KTAP document
in the KTAP files). The script's output is
the item's ``selftest output`` section.

Items carry the subsystem marker of their script (kernels/selftests/scripts.py) so ``-m
routing`` picks fib_tests.sh with our own routing cases. ``--kernel-selftests-set fast`` (the
default) collects the fast set of ``scripts.toml``; ``all`` every script (the nightly run).
"""

import argparse
import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kernels.acquire.kernel import version_under_test
from kernels.acquire.linux_source import ToWorkers, chosen_for_session, from_controller
from kernels.errors import KernelsError
from kernels.matrix.expectations import (
    DEFAULT_EXPECTATIONS,
    Expectation,
    expected_failure,
    load_expectations,
)
from kernels.matrix.results import SUBTESTS_PROPERTY
from kernels.selftests.build import Helpers, build_helpers, read_helpers
from kernels.selftests.output import Verdict
from kernels.selftests.protocols import missing_protocols, needs
from kernels.selftests.run import ScriptRun, guest_loopback_up, run_script, settings_timeout
from kernels.selftests.scripts import load_catalog, scripts, subsystem, uncontained
from kernels.selftests.source import OPTION, WHY_OPTION, Selftests, for_kernel, from_directory
from kernels.selftests.verdict import Judgement, Outcome, judge
from netns.features import in_netregress_vm
from netregress.errors import NetregressError

ANCHOR_SUFFIX = ".selftests"
PROPERTY = "kernel_selftests"
SET_OPTION = "--kernel-selftests-set"
MARKER = "kernel_selftests"
_CHOSEN = pytest.StashKey[tuple[Selftests, str] | None]()
_HELPERS = pytest.StashKey[Helpers | None]()
_WORKER_KEY = "netregress_kernel_selftests"
_HELP = (
    "also run the kernel's own network shell selftests (tools/testing/selftests/net "
    "and net/forwarding) as items of tests/cases/kernel-net.selftests: 'auto' takes them "
    "from the kernel under test's source (its tree, or Debian's linux-source package of "
    "its suite; the newest one for a kernel without), DIR a kernel tree; default off"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netregress kernels")
    group.addoption(OPTION, metavar="auto|DIR|off", default="off", help=_HELP)
    group.addoption(
        SET_OPTION,
        choices=("fast", "all"),
        default="fast",
        help="which selftest scripts: the fast set (kernels/selftests/scripts.toml, default) "
        "or all of them (the nightly run)",
    )
    group.addoption(WHY_OPTION, default="", help=argparse.SUPPRESS)  # from the host, for a guest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: the kernel's own network shell selftests")
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None and _WORKER_KEY in workerinput:
        chosen = from_controller(workerinput[_WORKER_KEY], Selftests)
        config.stash[_CHOSEN] = chosen
        config.stash[_HELPERS] = None if chosen is None else read_helpers(chosen[0].net)
        return
    try:
        chosen = chosen_for_session(
            config.getoption(OPTION),
            config.getoption(WHY_OPTION),
            config.getoption("--kernel", default=None),
            from_directory,
            lambda spec: for_kernel(spec, _say),
        )
        config.stash[_CHOSEN] = chosen
        config.stash[_HELPERS] = None if chosen is None else _helpers(chosen[0])
    except KernelsError as exc:
        raise pytest.UsageError(f"{OPTION}: {exc}") from None
    ToWorkers.register(config, _CHOSEN, _WORKER_KEY)


def _say(message: str) -> None:
    print(f"netregress selftests: {message}", flush=True)


def _helpers(selftests: Selftests) -> Helpers | None:
    """Build the helpers on a host; a guest (no compiler) reads what the host built."""
    if in_netregress_vm():
        return read_helpers(selftests.net)
    return build_helpers(selftests.top, selftests.net, _say)


def chosen_selftests(config: pytest.Config) -> tuple[Selftests, str] | None:
    """The selftests of this session and why (None: the option is off)."""
    return config.stash.get(_CHOSEN, None)


@pytest.hookimpl(optionalhook=True, trylast=True)
def pytest_netregress_guest_args(config: pytest.Config) -> list[str]:
    """The options for a pytest that runs this session's items in a VM guest (``--kernel``):
    the tree itself, already resolved and built here, and the set."""
    chosen = chosen_selftests(config)
    if chosen is None:
        return []
    return [f"{OPTION}={chosen[0].top}", f"{WHY_OPTION}={chosen[1]}",
            f"{SET_OPTION}={config.getoption(SET_OPTION)}"]  # fmt: skip


def pytest_report_header(config: pytest.Config) -> list[str]:
    chosen = chosen_selftests(config)
    if chosen is None:
        return []
    selftests, why = chosen
    lines = [f"kernel selftests: {selftests.describe()}: {why}"]
    helpers = config.stash.get(_HELPERS, None)
    if helpers is None:
        lines.append("kernel selftests' helpers: not built (a guest reads the host's build)")
    elif helpers.left_out:
        lines.append(f"kernel selftests' helpers left out: {', '.join(sorted(helpers.left_out))}")
    return lines


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    if file_path.suffix != ANCHOR_SUFFIX or chosen_selftests(parent.config) is None:
        return None
    return SelftestsAnchor.from_parent(parent, path=file_path)


class SelftestsAnchor(pytest.File):
    """The tree's scripts, under this file's node id."""

    def collect(self) -> Iterator[pytest.Item]:
        chosen = chosen_selftests(self.config)
        assert chosen is not None
        selftests = chosen[0]
        catalog = load_catalog()
        every = self.config.getoption(SET_OPTION) == "all"
        names = scripts(selftests.net)
        if not names:
            raise KernelsError(f"{selftests.net}: its Makefiles list no TEST_PROGS")
        for name in names:
            if every or name in catalog.fast:
                yield SelftestScript.from_parent(
                    self,
                    name=name,
                    script=selftests.net / name,
                    selftests=selftests,
                    guests_only=catalog.guests_only.get(name, ""),
                )


class SelftestScript(pytest.Item):
    """One script: run once, judged per sub-test."""

    def __init__(
        self, *, script: Path, selftests: Selftests, guests_only: str, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.script = script
        self.selftests = selftests
        self.guests_only = guests_only
        self.add_marker(MARKER)
        mark = subsystem(self.name)
        if mark is not None:
            self.add_marker(mark)
        self.user_properties.append((PROPERTY, selftests.describe()))

    def runtest(self) -> None:
        in_vm = in_netregress_vm()
        if not in_vm:
            why = self.guests_only or _uncontained(self.script)
            if why:
                pytest.skip(f"runs in VM guests only: {why}")
        from netns.readiness import ready

        ready(self.config)  # root (or a user namespace) to unshare: the fix if we lack it
        try:
            judgement = self._run(contained=not in_vm)
        except NetregressError as exc:  # ours (KernelsError) or a missing program's
            pytest.fail(f"{self.name}: {exc}", pytrace=False)
        if judgement.outcome == Outcome.SKIP:
            pytest.skip(judgement.message)
        if judgement.outcome == Outcome.XFAIL:
            pytest.xfail(judgement.message)
        if judgement.outcome == Outcome.FAIL:
            pytest.fail(f"{self.name}: {judgement.message}", pytrace=False)

    def _run(self, *, contained: bool) -> Judgement:
        """Run the script (its output a report section, its sub-tests a property), judged."""
        timeout = settings_timeout(self.script.parent)
        if not contained:
            guest_loopback_up()
        run = with_protocols(run_script(self.script, timeout=timeout, contained=contained))
        self.add_report_section("call", "selftest output", run.output)
        lines = "".join(f"{result.verdict}\t{result.name}\n" for result in run.results)
        self.user_properties.append((SUBTESTS_PROPERTY, lines))
        return judge(run, self._known_failures(), _iproute2_version(), timeout)

    def _known_failures(self) -> "_Known":
        path = Path(os.environ.get("NETREGRESS_EXPECTATIONS") or DEFAULT_EXPECTATIONS)
        kernel = os.environ.get("NETREGRESS_KERNEL") or "running"
        return _Known(load_expectations(path), self.nodeid, kernel, version_under_test())

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.script, None, f"selftest {self.name}"


class _Known:
    """The expectation covering a sub-test of one item on this kernel, if any."""

    def __init__(
        self, entries: list[Expectation], nodeid: str, kernel: str, version: tuple[int, ...]
    ) -> None:
        self.entries = entries
        self.nodeid = nodeid
        self.kernel = kernel
        self.version = version

    def __call__(self, name: str) -> Expectation | None:
        return expected_failure(self.entries, f"{self.nodeid}::{name}", self.kernel, self.version)


def with_protocols(run: ScriptRun) -> ScriptRun:
    """`run` with each failed sub-test named for a protocol this kernel lacks blamed on that
    (kernels/selftests/protocols.py); probed only when a sub-test failed."""
    if not any(result.verdict == Verdict.FAIL for result in run.results):
        return run
    missing = missing_protocols()
    results = tuple(
        replace(result, troubles=(*result.troubles, trouble))
        if result.verdict == Verdict.FAIL and (trouble := needs(result.name, missing))
        else result
        for result in run.results
    )
    return replace(run, results=results)


def _uncontained(script: Path) -> str:
    try:
        return uncontained(script.read_text(errors="replace"))
    except OSError as exc:
        raise KernelsError(f"cannot read {script}: {exc.strerror}") from None


def _iproute2_version() -> str:
    """``ip -V``'s version, for the skip that blames it."""
    try:
        text = subprocess.run(["ip", "-V"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "(unknown version)"
    words = text.split()
    return next(
        (word.removeprefix("iproute2-").rstrip(",") for word in words if "iproute2-" in word),
        text.strip(),
    )
