# SPDX-License-Identifier: GPL-2.0-only
"""pytest integration: every ``*.pkt`` under the test tree becomes one test per IP variant.

Each run happens in a child process (its own network namespace), so items are independent
and safe under ``pytest -n``. Scripts are linted at collection time: a malformed script is one
failing item with its ``file:line: message``, never a collection traceback.

Negative scripts carry ``// netregress: expect-fail: <regex>`` in a comment; the item then
passes only if the run fails with a message matching the regex (upstream ignores comments).

Every item carries the ``packetdrill`` marker. packetdrill's own options reach every script
from the pytest command line (``-D``/``--pkt-define``, ``--pkt-tolerance-usecs``, applied on
top of the script's option lines as packetdrill's command line is), and ``--pkt-ip-version``
keeps the variants a run wants; a bad value is a usage error before anything runs.

Timing: each process has one late-side slack (forced with ``--tolerance-scale``, or calibrated
when the first script of the process runs: every xdist worker measures for itself, and a
session without scripts never measures); every
item records its :class:`~.timing.TimingRecord` as the ``packetdrill_timing`` user
property (JSON, so JUnit files and the kernel matrix carry it), a pass that needed the slack is
reported as ``PASSED~`` and listed in the terminal summary, and a run too late to judge is an
xfail saying timing is not checkable on this machine (docs/timing-tolerance.md).
"""

import contextlib
import hashlib
import importlib.metadata
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from netregress.session import vm_kernel

from .backend import Backend, choose_backend, run_isolated
from .calibrate import Calibration, measure
from .config import IP_VERSIONS, Config, apply_option
from .conventions import (
    BROKEN,
    COMMON_OPTIONS,
    EXPECT_FAIL,
    SKIP_IF_HAS,
    variant_options,
    variants_for,
)
from .errors import ConfigError, PacketdrillError, UsageError
from .lexer import KEYWORDS
from .loader import CliOptions, load_script, read_script
from .result import RunResult
from .timing import (
    TIMING_PROPERTY,
    TimingRecord,
    judge_lateness,
    judge_run,
    late_by_the_engine,
    swallowed_by_the_slack,
)
from .tolerance import (
    DEFAULT_PERCENT,
    DEFAULT_USECS,
    LATE_BOUND_USECS,
    Tolerance,
    slack_for_scale,
)


@dataclass
class SessionSlack:
    """The session's late-side slack: forced on the command line, or measured on first use
    (once per process: each xdist worker measures the machine it runs on, when it needs to)."""

    forced: Tolerance | None = None
    why: str = "calibrated when the first script runs"
    calibration: Calibration | None = field(default=None, init=False)

    def tolerance(self) -> Tolerance:
        if self.forced is not None:
            return self.forced
        if self.calibration is None:
            self.calibration = measure()
            self.why = self.calibration.describe()
        return Tolerance().with_slack(self.calibration.late_slack_usecs, "calibrated")


@dataclass(frozen=True)
class ScriptOptions:
    """packetdrill's own options the pytest command line gives every script: ``defines``
    (``NAME=VALUE``), the base ``tolerance_usecs``, and the ``ip_versions`` to run (empty:
    every variant a script has)."""

    defines: tuple[str, ...] = ()
    tolerance_usecs: str | None = None
    ip_versions: tuple[str, ...] = ()

    def engine_options(self) -> CliOptions:
        """What either engine gets, after the variant's arguments so that these win (a define
        named like a variant's, e.g. ``TFO_COOKIE``, replaces it)."""
        options: CliOptions = [("define", value) for value in self.defines]
        if self.tolerance_usecs is not None:
            options.append(("tolerance_usecs", self.tolerance_usecs))
        return options

    def args(self) -> list[str]:
        """These options as pytest arguments, for a pytest that runs the items elsewhere (a
        VM guest: the IP versions are already in the node ids it gets)."""
        args = [f"--pkt-define={value}" for value in self.defines]
        if self.tolerance_usecs is not None:
            args.append(f"--pkt-tolerance-usecs={self.tolerance_usecs}")
        return args


_BACKEND_KEY = pytest.StashKey[Backend]()
SLACK_KEY = pytest.StashKey[SessionSlack]()
_OPTIONS_KEY = pytest.StashKey[ScriptOptions]()
PACKETDRILL_MARKER = "packetdrill"
_DEFINE = re.compile(r"(?P<name>[A-Za-z0-9_]+)=.*", re.S)  # a name the lexer sees as a word
_STDERR_LINES = 30  # of what a failed run wrote besides its diagnostic: a traceback fits


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("packetdrill")
    group.addoption(
        "--packetdrill",
        default=None,
        metavar="builtin|auto|PATH",
        help="engine for .pkt scripts: the builtin one (default), 'auto' (an "
        "upstream packetdrill on PATH if any) or an upstream binary's path",
    )
    group.addoption(
        "--tolerance-scale",
        type=float,
        default=None,
        metavar="F",
        help="force late-side timing slack of (F-1) x 4 ms for packetdrill scripts "
        "(the early side always keeps the script's base tolerance; default: "
        "slack calibrated when a process runs its first script)",
    )
    group.addoption(
        "-D",
        "--pkt-define",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="packetdrill's -D for every .pkt script: the word NAME means VALUE "
        "(repeatable; wins over the script's and the IP variant's own defines)",
    )
    group.addoption(
        "--pkt-tolerance-usecs",
        default=None,
        metavar="N",
        help="packetdrill's --tolerance_usecs for every .pkt script: the base timing "
        "tolerance on both sides, in microseconds (wins over the script's own line)",
    )
    group.addoption(
        "--pkt-ip-version",
        action="append",
        default=[],
        choices=IP_VERSIONS,
        metavar="VERSION",
        help="run only this IP variant of each .pkt script: "
        + ", ".join(IP_VERSIONS)
        + " (repeatable; default: every variant the script has)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{PACKETDRILL_MARKER}: runs a packetdrill script (every .pkt item, and a case "
        "that runs one)",
    )
    try:
        config.stash[_BACKEND_KEY] = choose_backend(config.getoption("--packetdrill"))
    except UsageError as err:
        raise pytest.UsageError(err.text) from None
    config.stash[_OPTIONS_KEY] = script_options(config)
    given = config.getoption("--tolerance-scale")
    if given is None:
        config.stash[SLACK_KEY] = SessionSlack()
        return
    if given < 1:
        raise pytest.UsageError("--tolerance-scale must be at least 1 (it adds late slack)")
    config.stash[SLACK_KEY] = SessionSlack(
        Tolerance().with_slack(slack_for_scale(given), "command line"),
        f"--tolerance-scale={given:g}",
    )


def script_options(config: pytest.Config) -> ScriptOptions:
    """The command line's packetdrill options, checked the way the engine checks its own
    command line, so that a bad value stops the session at once instead of failing every
    script (or, for a define the lexer can never use, changing nothing)."""
    defines: list[str] = config.getoption("--pkt-define")
    for value in defines:
        match = _DEFINE.fullmatch(value)
        if match is None:
            raise pytest.UsageError(
                f"-D/--pkt-define {value!r}: expected NAME=VALUE, NAME made of letters, "
                "digits and _ (the script word it replaces)"
            )
        if match["name"] in KEYWORDS:
            raise pytest.UsageError(
                f"-D/--pkt-define {value!r}: {match['name']} is a packetdrill keyword, which "
                "a define never replaces"
            )
    usecs: str | None = config.getoption("--pkt-tolerance-usecs")
    if usecs is not None and not _engine_takes_usecs(usecs):
        raise pytest.UsageError(
            f"--pkt-tolerance-usecs={usecs}: expected a whole number of microseconds "
            "from 1 to 2147483647 (packetdrill's --tolerance_usecs)"
        )
    versions: list[str] = config.getoption("--pkt-ip-version")
    return ScriptOptions(tuple(defines), usecs, tuple(dict.fromkeys(versions)))


def _engine_takes_usecs(value: str) -> bool:
    """Plain decimal digits (the binary's atoi() would read ``1_000`` as 1, Python's int() as
    1000) within the range our engine accepts."""
    if not (value.isascii() and value.isdigit()):
        return False
    try:
        apply_option(Config(), "tolerance_usecs", value, "Command Line")
    except ConfigError:
        return False
    return True


@pytest.hookimpl(optionalhook=True)
def pytest_netregress_guest_args(config: pytest.Config) -> list[str]:
    """The command line's script options for a pytest that runs this session's items in a VM
    guest (``--kernel``), which otherwise gets only the node ids; the engine too, when one was
    named (the guest reads the same binary through the shared file system)."""
    engine: str | None = config.getoption("--packetdrill", default=None)
    named = [f"--packetdrill={engine}"] if engine else []
    return named + config.stash.get(_OPTIONS_KEY, ScriptOptions()).args()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [_engine_line(config), *_options_line(config.stash[_OPTIONS_KEY])]


def _engine_line(config: pytest.Config) -> str:
    return f"packetdrill: {_engine_name(config)} engine; {_slack_words(config)}"


def _engine_name(config: pytest.Config) -> str:
    backend = config.stash[_BACKEND_KEY]
    return backend.name if backend.name == "builtin" else f"upstream {backend.binary}"


def _slack_words(config: pytest.Config) -> str:
    """The late-side slack as the session knows it before any script ran."""
    if vm_kernel(config):
        return "timing calibrated inside the VM guest"
    bound = f"bound +{LATE_BOUND_USECS / 1000:.0f} ms"
    slack = config.stash[SLACK_KEY]
    if slack.forced is None:
        return f"late-side timing slack {slack.why}; {bound}"
    usecs = slack.forced.late_slack_usecs
    return f"late-side timing slack +{usecs / 1000:.1f} ms ({slack.why}); {bound}"


@pytest.hookimpl(optionalhook=True)
def pytest_netregress_environment(config: pytest.Config) -> dict[str, str]:
    """What a report's environment table says about this session's scripts: which engine
    runs them (its version: netregress's for ours, the binary's digest for upstream's, which
    has no version of its own), the timing tolerance they are judged by, and the options every
    script got. The slack a calibration measured is known only once scripts ran:
    :func:`pytest_netregress_environment_at_end`."""
    backend = config.stash[_BACKEND_KEY]
    if backend.name == "builtin":
        version = f"builtin, netregress {_netregress_version()}"
    else:
        digest = hashlib.sha256(Path(backend.binary).read_bytes()).hexdigest()[:16]
        version = f"upstream binary {backend.binary} (sha256 {digest}…)"
    options = config.stash[_OPTIONS_KEY]
    base = (
        f"{options.tolerance_usecs} us (--pkt-tolerance-usecs)"
        if options.tolerance_usecs is not None
        else f"{DEFAULT_USECS} us or {DEFAULT_PERCENT:g}% of the gap (packetdrill's default; "
        "a script's own --tolerance_usecs line wins)"
    )
    facts = {
        "packetdrill engine": version,
        "packetdrill timing": f"base tolerance {base}; {_slack_words(config)}",
    }
    facts.update(("packetdrill options", line.split(": ", 1)[1]) for line in _options_line(options))
    return facts


def _netregress_version() -> str:
    try:
        return importlib.metadata.version("netregress")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


@pytest.hookimpl(optionalhook=True)
def pytest_netregress_environment_at_end(
    config: pytest.Config, reports: Sequence[pytest.TestReport]
) -> dict[str, str]:
    """The late-side slack the scripts ran with, once any ran."""
    used = slack_used(reports)
    return {"packetdrill slack used": used} if used else {}


def slack_used(reports: Iterable[pytest.TestReport]) -> str:
    """The late-side slacks the items of *reports* ran with, each once (``+0.2 ms
    (calibrated)``; a session of xdist workers can have one per worker), or "" for none."""
    records = [
        record for rep in reports if rep.when == "call" and (record := timing_of(rep)) is not None
    ]
    slacks = sorted({(r.tolerance.late_slack_usecs, r.tolerance.slack_from) for r in records})
    return ", ".join(f"+{usecs / 1000:.1f} ms ({source})" for usecs, source in slacks)


def _options_line(options: ScriptOptions) -> list[str]:
    """What the command line gave every script, in packetdrill's own spelling, when anything."""
    given = [
        f"-D {value}" if name == "define" else f"--{name}={value}"
        for name, value in options.engine_options()
    ]
    if options.ip_versions:
        given.append(f"IP variants {', '.join(options.ip_versions)} only")
    return [f"packetdrill: every script with {'; '.join(given)}"] if given else []


def timing_of(report: pytest.TestReport) -> TimingRecord | None:
    """The timing record a ``.pkt`` item attached to its report, if any."""
    for name, value in report.user_properties:
        if name == TIMING_PROPERTY:
            return TimingRecord.from_json(str(value))
    return None


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """A pass that needed the late slack: ``~`` / ``PASSED~`` instead of ``.`` / ``PASSED``."""
    if report.when != "call" or not report.passed:
        return None
    record = timing_of(report)
    if record is None or record.verdict != "widened":
        return None
    return "passed", "~", (f"PASSED~ ({record.summary()})", {"yellow": True})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The late slack the scripts ran with (measured when first needed, so it is known only
    now), then passes that relied on it, each with how late it was."""
    used = slack_used(
        rep
        for reports in terminalreporter.stats.values()
        for rep in reports
        if isinstance(rep, pytest.TestReport)
    )
    if used:
        terminalreporter.write_line(f"packetdrill: late-side slack used {used}")
    widened = [
        (rep.nodeid, record)
        for rep in terminalreporter.stats.get("passed", [])
        if isinstance(rep, pytest.TestReport)
        and rep.when == "call"
        and (record := timing_of(rep)) is not None
        and record.verdict == "widened"
    ]
    if not widened:
        return
    terminalreporter.section("packetdrill timing")
    for nodeid, record in sorted(widened, key=lambda pair: pair[0]):
        terminalreporter.write_line(
            f"PASSED~ {nodeid}: passed ({record.summary()}; {record.tolerance.describe()})"
        )
    terminalreporter.write_line(
        f"{len(widened)} passed only with late-side slack (PASSED~; docs/timing-tolerance.md)"
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """Every ``.pkt`` but hidden ones (a broken variant's copy while it runs)."""
    if file_path.suffix == ".pkt" and not file_path.name.startswith("."):
        return PktFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--pkt-ip-version``: the other variants are deselected (and counted as such)."""
    wanted = config.stash[_OPTIONS_KEY].ip_versions
    if not wanted:
        return
    dropped = [item for item in items if isinstance(item, PktItem) and item.variant not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = set(dropped)
        items[:] = [item for item in items if item not in gone]


def run_for_test(config: pytest.Config, path: Path, variant: str) -> RunResult:
    """Run *path* as this session runs every script: chosen backend, variant arguments,
    the session's late slack, and a pcap in the current test's artifact folder (kept on
    failure).

    Also what Python cases use when they wrap a script to assert more than it can; a run that
    passed only with lateness beyond the bound ends the test as an xfail, never a pass."""
    result, tolerance = run_with_tolerance(config, path, variant)
    record = judge_lateness(result, tolerance)
    if result.passed and record.verdict == "not-checkable":
        pytest.xfail(record.summary())
    return result


def run_with_tolerance(
    config: pytest.Config, path: Path, variant: str, arguments: CliOptions | None = None
) -> tuple[RunResult, Tolerance]:
    """:func:`run_for_test`, plus the tolerance the run had: the script's base with the
    session's slack. `arguments` replace the variant's own (:func:`variant_arguments`) for
    a corpus whose runner passes others (the kernel's ``ksft_runner.sh``)."""
    from netns import artifacts, privilege
    from netns.readiness import ready

    ready(config)  # the run unshares a namespace: privilege, reaping
    if (why := privilege.tun_problem()) is not None:
        pytest.skip(why)  # and it needs a tun device
    base = variant_arguments(variant) if arguments is None else list(arguments)
    options = base + config.stash[_OPTIONS_KEY].engine_options()
    options.append(("pcap", str(artifacts.new_path(f"{path.stem}-{variant}", ".pcap"))))
    result = run_isolated(
        config.stash[_BACKEND_KEY], str(path), options, config.stash[SLACK_KEY].tolerance()
    )
    return result, result.tolerance


def variant_arguments(variant: str) -> CliOptions:
    """What our corpus runner passes a script in one IP variant (upstream's convention)."""
    return variant_options(variant) + COMMON_OPTIONS


@dataclass(frozen=True)
class VariantRun:
    """One item of a script: its name, IP variant, the arguments its runner passes, and
    markers of its own (a runner that counts a failure as an XFAIL on a slow machine)."""

    name: str
    variant: str
    arguments: CliOptions
    marks: tuple[pytest.MarkDecorator, ...] = ()


class PktFile(pytest.File):
    """One script; the ``packetdrill`` marker on the file reaches each of its items."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker(PACKETDRILL_MARKER)

    def variant_runs(self, text: str) -> list[VariantRun]:
        """The items of this script: one per IP variant of our convention (a corpus with a
        runner of its own overrides this)."""
        return [VariantRun(v, v, variant_arguments(v)) for v in variants_for(self.path, text)]

    def collect(self) -> Iterator[pytest.Item]:
        try:
            text = read_script(str(self.path))
        except PacketdrillError as err:
            yield PktLintError.from_parent(self, name="lint", message=err.text)
            return
        expect = EXPECT_FAIL.search(text)
        try:
            runs = self.variant_runs(text)
        except PacketdrillError as err:
            yield PktLintError.from_parent(self, name="lint", message=err.text)
            return
        given = self.config.stash[_OPTIONS_KEY].engine_options()
        if expect is None:
            for run in runs:
                try:
                    load_script(str(self.path), run.arguments + given + [("dry_run", None)], text)
                except PacketdrillError as err:
                    yield PktLintError.from_parent(self, name="lint", message=err.text)
                    return
        skip_if = SKIP_IF_HAS.search(text)
        for run in runs:
            item = PktItem.from_parent(
                self,
                name=run.name,
                variant=run.variant,
                expect_fail=expect.group(1) if expect else None,
                skip_if_has=skip_if.group(1).split() if skip_if else [],
                arguments=run.arguments,
            )
            for mark in run.marks:
                item.add_marker(mark)
            yield item
        if runs:
            yield from self._broken_variants(text, runs[0].variant, expect is not None, skip_if)

    def _broken_variants(
        self, text: str, variant: str, negative: bool, skip_if: re.Match[str] | None
    ) -> Iterator[pytest.Item]:
        """One strict-xfail item per `broken` header, in the script's first IP variant: the
        same script with one configuration changed must fail, or its oracle is blind."""
        for match in BROKEN.finditer(text):
            name, old, new, why = match.groups()
            found = text.count(old) - 1  # the header itself names it once
            if negative or found != 1:
                problem = (
                    "a negative script cannot carry a broken variant"
                    if negative
                    else f"`{old}` must occur exactly once outside the header (found {found})"
                )
                yield PktLintError.from_parent(
                    self, name=f"broken-{name}", message=f"{self.path}: broken {name}: {problem}"
                )
                continue
            header = match.group(0)
            changed = text.replace(header, "").replace(old, new)
            item = PktItem.from_parent(
                self,
                name=f"{variant}-broken-{name}",
                variant=variant,
                expect_fail=None,
                skip_if_has=skip_if.group(1).split() if skip_if else [],
                changed_text=changed,
            )
            item.add_marker(
                pytest.mark.xfail(strict=True, raises=PktFailure, reason=f"broken variant: {why}")
            )
            yield item


class PktLintError(pytest.Item):
    """A script that does not parse: one failing item carrying the parser's message."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise PktFailure(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.name}: lint"


@contextlib.contextmanager
def _scratch_copy(path: Path, text: str) -> Iterator[Path]:
    """`text` as a hidden sibling of `path` for the length of one run, so the script's folder
    (its working directory, its relative paths) is the same. Hidden files are never collected;
    the name carries the run id, so parallel runs never meet, and a killed run's copy is
    removed by the next run that copies the same script."""
    from netregress import naming

    for stale in path.parent.glob(f".{path.stem}.{naming.PREFIX}*-broken.pkt"):
        owner = naming.owner_of(stale.name.removeprefix(f".{path.stem}."))
        if owner is not None and not owner.alive():
            stale.unlink(missing_ok=True)
    copy = path.with_name(f".{path.stem}.{naming.run_id()}-broken.pkt")
    copy.write_text(text)
    try:
        yield copy
    finally:
        copy.unlink(missing_ok=True)


def describe_run(result: RunResult, rename: tuple[str, str] = ("", "")) -> str:
    """A failed run's own diagnostic, then where to look next (a case that runs a script
    itself says it so too). The diagnostic already holds the ``script packet:`` and ``actual
    packet:`` lines of a sniffed packet (both engines print them, as packetdrill does), so
    they are not repeated. What else the run wrote to stderr is kept (its last lines): a
    failed code block's traceback ends there with the value its assertion printed
    (``AssertionError: 25733``), which the diagnostic itself, ``error executing code``, does
    not name, nor does upstream's. ``rename`` replaces the script's name in the diagnostic."""
    old, new = rename
    message = result.message.replace(old, new) if old else result.message
    parts = [message or f"exit status {result.exit_status}"]
    if result.line is not None:
        parts.append(f"script line: {result.line}")
    if result.pcap and Path(result.pcap).exists():
        parts.append(f"pcap: {result.pcap}")
    if result.stdout.strip():
        parts.append(f"--- engine stdout ---\n{result.stdout.rstrip()}")
    said = set(result.message.splitlines())
    rest = [line for line in result.stderr.splitlines() if line.strip() and line not in said]
    if rest:
        parts.append("--- engine stderr ---\n" + "\n".join(rest[-_STDERR_LINES:]))
    return "\n".join(parts)


class PktFailure(Exception):
    """A script run that did not end as the script (or its expect-fail header) says."""


class PktItem(pytest.Item):
    """One script in one IP variant; with `changed_text`, its broken variant's copy instead
    (run from a temporary file in the script's own folder, so its relative paths still hold)."""

    def __init__(
        self,
        *,
        variant: str,
        expect_fail: str | None,
        skip_if_has: list[str],
        changed_text: str | None = None,
        arguments: CliOptions | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.variant = variant
        self.arguments = arguments
        self.expect_fail = expect_fail
        self.skip_if_has = skip_if_has
        self.changed_text = changed_text

    def _script(self) -> contextlib.AbstractContextManager[Path]:
        if self.changed_text is None:
            return contextlib.nullcontext(self.path)
        return _scratch_copy(self.path, self.changed_text)

    def runtest(self) -> None:
        if self.skip_if_has:
            from netns import features  # the library's cached kernel probes

            present = [name for name in self.skip_if_has if features.has(name)]
            if present:
                pytest.skip(f"{self.path.name} expects a kernel without {', '.join(present)}")
        with self._script() as script:
            result, tolerance = run_with_tolerance(
                self.config, script, self.variant, self.arguments
            )
        if self.expect_fail is None or self.stopped_short_by_the_engine(result):
            record = judge_run(result, tolerance)
        elif self.lateness_swallowed_by_the_slack(result):
            record = swallowed_by_the_slack(result, tolerance)
        else:
            record = judge_lateness(result, tolerance)
        self.user_properties.append((TIMING_PROPERTY, record.to_json()))
        if record.verdict == "not-checkable":
            pytest.xfail(record.summary())
        if self.expect_fail is not None:
            self.check_expected_failure(result)
        elif not result.passed:
            raise PktFailure(self.describe(result))

    def stopped_short_by_the_engine(self, result: RunResult) -> bool:
        """A negative script that failed before its expected failure because the engine (or
        the upstream binary) injected a packet or started a call late: the line the script is
        about was never reached, so its verdict is "not checkable on this machine", not a
        mismatch (seen under load: the binary injected 20 ms late, line 14 of early-rto.pkt)."""
        assert self.expect_fail is not None
        return (
            not result.passed
            and late_by_the_engine(result)
            and not re.search(self.expect_fail, result.message)
        )

    def lateness_swallowed_by_the_slack(self, result: RunResult) -> bool:
        """A negative script about a *late* event that passed only because this machine's
        late-side slack accepted the lateness it exists to catch (a 20 ms late train under
        TCG's calibrated slack): its oracle cannot be checked here, so "not checkable", never
        a failure of the expectation and never a pass of the script."""
        assert self.expect_fail is not None
        return (
            result.passed
            and result.late_usecs > 0
            and "timing error" in self.expect_fail
            and "happened at" in self.expect_fail
        )

    def check_expected_failure(self, result: RunResult) -> None:
        assert self.expect_fail is not None
        if result.passed:
            raise PktFailure(
                f"expected a failure matching /{self.expect_fail}/, but the script passed"
            )
        if not re.search(self.expect_fail, result.message):
            raise PktFailure(
                f"expected a failure matching /{self.expect_fail}/, got:\n{self.describe(result)}"
            )
        if result.pcap:
            Path(result.pcap).unlink(missing_ok=True)

    def describe(self, result: RunResult) -> str:
        """:func:`describe_run`, the script named as its node id names it: relative to where
        pytest was started when it lies below it. The first line is what pytest's short
        summary keeps of a failure, cut at the terminal's width, and an absolute path used
        that width up before the error began."""
        shown = os.path.relpath(self.path, self.config.invocation_params.dir)
        shown = str(self.path) if shown.startswith("..") else shown
        return describe_run(result, (f"{self.path}:", f"{shown}:"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, PktFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.name}[{self.variant}]"
