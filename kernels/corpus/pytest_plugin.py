# SPDX-License-Identifier: GPL-2.0-only
"""``--kernel-pkt-corpus auto|DIR|off``: the kernel's own packetdrill selftests as pytest items.

Each script × IP version its ``ksft_runner.sh`` runs is one ``.pkt`` item of the packetdrill
plugin (the same engine choice, tolerance policy, options and failure page), run with exactly
the arguments that runner passes (kernels/corpus/runner.py) from the corpus's folder, so its
``./defaults.sh`` init commands and relative paths hold. Items carry ``packetdrill``, ``tcp``
and a feature marker from the file name (kernels/corpus/features.py), and the corpus's
origin as the ``kernel_packetdrill_corpus`` property (JUnit, report log, the matrix).

Why an anchor file (``tests/cases/kernel-packetdrill.corpus``): the corpus lives outside the
checkout (a kernel tree, the cache), but node ids must not depend on where: a VM guest, a rerun
or an expectations entry names ``tests/cases/kernel-packetdrill.corpus::<script>::<ipv4>``,
and pytest finds that file wherever the corpus is. With the option off (the default) the
anchor collects nothing, so the default runs stay as fast as before.

The one plugin this one imports is the packetdrill plugin, whose items and session state
(engine, tolerance, options) its items are; it names that plugin as a dependency, so
``-p kernels.corpus.pytest_plugin`` alone loads it too.
"""

import argparse
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

# No public name: --junitxml's writer, whose suite properties only a hook can add to before
# any test (the public record_testsuite_property is a fixture).
from _pytest.junitxml import xml_key

from kernels.acquire.kernel import version_under_test
from kernels.acquire.linux_source import ToWorkers, chosen_for_session, from_controller
from kernels.corpus.features import FEATURES, UNKNOWN, features_of
from kernels.corpus.needs import (
    CONGESTION_KNOB,
    KnobProbe,
    default_congestion,
    knob_settings,
    predated,
    why_skipped,
)
from kernels.corpus.runner import Plan, RunnerProbe, command_line
from kernels.corpus.source import OPTION, WHY_OPTION, Corpus, for_kernel, from_directory
from kernels.errors import KernelsError
from kernels.report.ktap import machine_slow
from packetdrill.pytest_plugin import PktFile, VariantRun

pytest_plugins = ["packetdrill.pytest_plugin"]  # the items here are that plugin's items
ANCHOR_SUFFIX = ".corpus"
PROPERTY = "kernel_packetdrill_corpus"
COMMAND_PROPERTY = "ksft_runner_command"  # what the kernel's runner would have typed
_CORPUS = pytest.StashKey[tuple[Corpus, str] | None]()
_KNOBS = pytest.StashKey[KnobProbe]()
_WORKER_KEY = "netregress_kernel_pkt_corpus"
_SLOW_REASON = (
    "KSFT_MACHINE_SLOW is set: the kernel's runner counts a failure of this script as XFAIL"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("packetdrill")
    group.addoption(
        OPTION,
        default="off",
        metavar="auto|DIR|off",
        help="also run the kernel's own packetdrill selftests "
        "(tools/testing/selftests/net/packetdrill) as items of "
        "tests/cases/kernel-packetdrill.corpus: 'auto' takes the corpus of the kernel under "
        "test (its source tree, or Debian's linux-source package of its suite; the newest "
        "one for a kernel without), DIR a kernel tree or the corpus folder; default off",
    )
    group.addoption(WHY_OPTION, default="", help=argparse.SUPPRESS)  # from the host, for a guest


def pytest_configure(config: pytest.Config) -> None:
    for name, about in FEATURES.items():
        config.addinivalue_line("markers", f"{name}: kernel packetdrill corpus feature: {about}")
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None and _WORKER_KEY in workerinput:
        config.stash[_CORPUS] = from_controller(workerinput[_WORKER_KEY], Corpus)
        _register_new_features(config)
        return
    try:
        config.stash[_CORPUS] = chosen_for_session(
            config.getoption(OPTION),
            config.getoption(WHY_OPTION),
            config.getoption("--kernel", default=None),
            from_directory,
            lambda spec: for_kernel(spec, lambda words: print(f"netregress corpus: {words}")),
        )
    except KernelsError as exc:
        raise pytest.UsageError(f"{OPTION}: {exc}") from None
    _register_new_features(config)
    ToWorkers.register(config, _CORPUS, _WORKER_KEY)


def _register_new_features(config: pytest.Config) -> None:
    """Register the feature names of the corpus's scripts that FEATURES does not know yet
    (a newer kernel's), now and not while collecting: `-m newthing` is checked against the
    registered markers before any collection (netns/selection.py)."""
    chosen = chosen_corpus(config)
    if chosen is None:
        return
    new = {f for script in chosen[0].path.glob("*.pkt") for f in features_of(script.name)}
    for feature in sorted(new - FEATURES.keys()):
        config.addinivalue_line("markers", f"{feature}: {UNKNOWN}")


def chosen_corpus(config: pytest.Config) -> tuple[Corpus, str] | None:
    """The corpus of this session and why (None: the option is off)."""
    return config.stash.get(_CORPUS, None)


@pytest.hookimpl(optionalhook=True, trylast=True)
def pytest_netregress_guest_args(config: pytest.Config) -> list[str]:
    """The option for a pytest that runs this session's items in a VM guest (``--kernel``):
    the folder itself, already resolved here."""
    chosen = chosen_corpus(config)
    return [] if chosen is None else [f"{OPTION}={chosen[0].path}"]


def pytest_report_header(config: pytest.Config) -> list[str]:
    chosen = chosen_corpus(config)
    if chosen is None:
        return []
    corpus, why = chosen
    kernel = (
        os.environ.get("NETREGRESS_KERNEL")
        or config.getoption("--kernel", default=None)
        or f"running {os.uname().release}"
    )
    return [f"kernel packetdrill corpus: {corpus.describe()}, on kernel {kernel}: {why}"]


def pytest_sessionstart(session: pytest.Session) -> None:
    """JUnit: the suite names the corpus too (each test case carries it as well)."""
    chosen = chosen_corpus(session.config)
    xml = session.config.stash.get(xml_key, None)
    if chosen is not None and xml is not None:
        xml.add_global_property(PROPERTY, chosen[0].describe())


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    if file_path.suffix != ANCHOR_SUFFIX or chosen_corpus(parent.config) is None:
        return None
    return CorpusAnchor.from_parent(parent, path=file_path)


class CorpusAnchor(pytest.File):
    """The corpus's scripts, under this file's node id."""

    def collect(self) -> Iterator[pytest.Collector | pytest.Item]:
        chosen = chosen_corpus(self.config)
        assert chosen is not None
        corpus = chosen[0]
        scripts = sorted(corpus.path.glob("*.pkt"))
        if not scripts:
            raise KernelsError(f"{corpus.path}: the corpus holds no .pkt script")
        slow = machine_slow()
        with RunnerProbe(corpus.path) as probe:
            for script in scripts:
                yield CorpusScript.from_parent(
                    self,
                    path=script,
                    name=script.name,
                    nodeid=f"{self.nodeid}::{script.name}",
                    plan=probe.plan(script, slow=slow),
                    corpus=corpus,
                )


class CorpusScript(PktFile):
    """One script of the corpus: its items are the runs its runner makes."""

    def __init__(self, *, plan: Plan, corpus: Corpus, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan = plan
        self.corpus = corpus
        self.settings: list[str] = []  # knob=value its init commands set (needs.py)
        self.add_marker("tcp")
        for feature in features_of(self.path.name):
            self.add_marker(feature)  # registered at configure (_register_new_features)

    def collect(self) -> Iterator[pytest.Item]:
        if self.plan.refused or self.plan.skipped:
            yield RunnerVerdict.from_parent(
                self, name="runner", refused=self.plan.refused, skipped=self.plan.skipped
            )
            return
        for item in super().collect():
            item.user_properties.append((PROPERTY, self.corpus.describe()))
            if any(run.name == item.name for run in self.plan.runs):
                item.user_properties.append((COMMAND_PROPERTY, self.command(item.name)))
            yield item

    def variant_runs(self, text: str) -> list[VariantRun]:
        self.settings = knob_settings(text)
        runs = []
        for run in self.plan.runs:
            marks = (pytest.mark.xfail(reason=_SLOW_REASON),) if run.on_failure == "xfail" else ()
            runs.append(VariantRun(run.name, run.variant, run.options, marks))
        return runs

    def command(self, name: str) -> str:
        """The kernel runner's command line for the run `name` (in the item's report)."""
        run = next(run for run in self.plan.runs if run.name == name)
        return command_line(run, self.path.name)


class RunnerVerdict(pytest.Item):
    """A script the kernel's runner itself refuses (fails) or skips: one item saying so."""

    def __init__(self, *, refused: str, skipped: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refused = refused
        self.skipped = skipped

    def runtest(self) -> None:
        if self.skipped:
            pytest.skip(f"the kernel's runner skips {self.path.name}: {self.skipped}")
        raise KernelsError(f"the kernel's runner refuses {self.path.name}: {self.refused}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.name}: runner"


def _knobs(config: pytest.Config) -> KnobProbe:
    if _KNOBS not in config.stash:
        config.stash[_KNOBS] = KnobProbe()
    return config.stash[_KNOBS]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A script whose init settings this kernel refuses, or sets a value this kernel predates
    (needs.py), is a skip saying which and why."""
    script = item.parent
    if not isinstance(script, CorpusScript) or not script.settings:
        return
    from netns.readiness import ready

    ready(item.config)  # the probe unshares a namespace: fail with the fix if we cannot
    try:
        refused = _knobs(item.config).refused(script.settings)
    except KernelsError as exc:
        pytest.fail(str(exc), pytrace=False)
    if refused:
        pytest.skip(why_skipped(refused))
    try:
        early = predated(script.settings, version_under_test())
    except KernelsError as exc:
        pytest.fail(str(exc), pytrace=False)
    if early:
        pytest.skip(early)


def _congestion_refused(item: pytest.Item, script: CorpusScript) -> str | None:
    """Why a failure is not judged here: the namespace may not set the congestion control
    the corpus's defaults.sh asks for, so the script ran under the host's default."""
    wanted = default_congestion(script.corpus.path)
    if wanted is None:
        return None
    setting = f"{CONGESTION_KNOB}={wanted}"
    answer = _knobs(item.config).refused([setting]).get(setting)
    if answer is None:
        return None
    try:
        allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().strip()
    except OSError:
        allowed = "unknown"
    return (
        f"not judged here: defaults.sh sets net.ipv4.tcp_congestion_control={wanted}, which a "
        f"network namespace of this host may not ({answer}: the host's "
        f"tcp_allowed_congestion_control is '{allowed}'), so the script ran under another "
        "congestion control; a VM guest of the matrix judges it"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failure of a corpus script under a congestion control it did not ask for is an
    XFAIL with the reason (a pass stays a pass: the script's checks held anyway)."""
    report: pytest.TestReport = yield
    script = item.parent
    if call.when != "call" or not report.failed or not isinstance(script, CorpusScript):
        return report
    try:
        why = _congestion_refused(item, script)
    except KernelsError:
        return report
    if why is not None:
        failed = next(iter(report.longreprtext.splitlines()), "")
        failed = failed.removeprefix(f"{script.corpus.path}/")  # the script's name suffices
        report.outcome = "skipped"
        report.wasxfail = f"{why}; the run failed with: {failed}"
    return report
