"""pytest integration: every ``*.pkt`` under the test tree becomes one test per IP variant.

Each run happens in a child process (its own network namespace), so items are independent
and safe under ``pytest -n``. Scripts are linted at collection time: a malformed script is one
failing item with its ``file:line: message``, never a collection traceback.

Negative scripts carry ``// netregress: expect-fail: <regex>`` in a comment; the item then
passes only if the run fails with a message matching the regex (upstream ignores comments).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from .backend import Backend, choose_backend, run_isolated
from .calibrate import Calibration, measure
from .errors import PacketdrillError, UsageError
from .loader import CliOptions, load_script, read_script
from .result import RunResult
from .variants import COMMON_OPTIONS, EXPECT_FAIL, SKIP_IF_HAS, variant_options, variants_for

_BACKEND_KEY = pytest.StashKey[Backend]()
_SCALE_KEY = pytest.StashKey[tuple[float, str]]()
_CALIBRATION_KEY = pytest.StashKey[Calibration]()
_CALIBRATION = "netregress_packetdrill_calibration"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("packetdrill")
    group.addoption("--packetdrill", default=None, metavar="builtin|auto|PATH",
                    help="engine for .pkt scripts: the builtin one (default), 'auto' (an "
                         "upstream packetdrill on PATH if any) or an upstream binary's path")
    group.addoption("--tolerance-scale", type=float, default=None, metavar="F",
                    help="multiply every packetdrill timing tolerance by F "
                         "(default: calibrated once per boot)")


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[_BACKEND_KEY] = choose_backend(config.getoption("--packetdrill"))
    except UsageError as err:
        raise pytest.UsageError(err.text) from None
    given = config.getoption("--tolerance-scale")
    if given is not None:
        if given <= 0:
            raise pytest.UsageError("--tolerance-scale must be positive")
        config.stash[_SCALE_KEY] = (given, f"tolerance scale {given:.2f} (--tolerance-scale)")
    else:
        worker_input = getattr(config, "workerinput", {})
        if _CALIBRATION in worker_input:
            calibration = Calibration(**worker_input[_CALIBRATION])
        else:
            calibration = measure()
        config.stash[_SCALE_KEY] = (calibration.scale, calibration.describe())
        config.stash[_CALIBRATION_KEY] = calibration


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: every worker uses the controller's one measurement of this session."""
    calibration = node.config.stash.get(_CALIBRATION_KEY, None)
    if calibration is not None:
        node.workerinput[_CALIBRATION] = asdict(calibration)


def pytest_report_header(config: pytest.Config) -> list[str]:
    backend = config.stash[_BACKEND_KEY]
    name = backend.name if backend.name == "builtin" else f"upstream {backend.binary}"
    if config.getoption("kernel", default=None):
        return [f"packetdrill: {name} engine; timing calibrated inside the VM guest"]
    return [f"packetdrill: {name} engine; {config.stash[_SCALE_KEY][1]}"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    if file_path.suffix == ".pkt":
        return PktFile.from_parent(parent, path=file_path)
    return None


def run_for_test(config: pytest.Config, path: Path, variant: str) -> RunResult:
    """Run *path* as this session runs every script: chosen backend, variant arguments,
    calibrated tolerance, and a pcap in the current test's artifact folder (kept on failure).

    Also what Python cases use when they wrap a script to assert more than it can."""
    options = variant_options(variant) + COMMON_OPTIONS
    scale = config.stash[_SCALE_KEY][0]
    if scale != 1.0:
        options.append(("tolerance_scale", f"{scale}"))
    try:
        from netns import artifacts
        options.append(("pcap", str(artifacts.new_path(f"{path.stem}-{variant}", ".pcap"))))
    except ImportError:
        pass
    return run_isolated(config.stash[_BACKEND_KEY], str(path), options)


class PktFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            text = read_script(str(self.path))
        except PacketdrillError as err:
            yield PktLintError.from_parent(self, name="lint", message=err.text)
            return
        expect = EXPECT_FAIL.search(text)
        variants = variants_for(self.path, text)
        if expect is None:
            for variant in variants:
                try:
                    load_script(str(self.path), variant_options(variant) + [("dry_run", None)],
                                text)
                except PacketdrillError as err:
                    yield PktLintError.from_parent(self, name="lint", message=err.text)
                    return
        skip_if = SKIP_IF_HAS.search(text)
        for variant in variants:
            yield PktItem.from_parent(self, name=variant, variant=variant,
                                      expect_fail=expect.group(1) if expect else None,
                                      skip_if_has=skip_if.group(1).split() if skip_if else [])


class PktLintError(pytest.Item):
    """A script that does not parse: one failing item carrying the parser's message."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise PktFailure(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.name}: lint"


class PktFailure(Exception):
    """A script run that did not end as the script (or its expect-fail header) says."""


class PktItem(pytest.Item):
    def __init__(self, *, variant: str, expect_fail: str | None, skip_if_has: list[str],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.variant = variant
        self.expect_fail = expect_fail
        self.skip_if_has = skip_if_has

    def runtest(self) -> None:
        if self.skip_if_has:
            from netns import features   # the library's cached kernel probes
            present = [name for name in self.skip_if_has if features.has(name)]
            if present:
                pytest.skip(f"{self.path.name} expects a kernel without {', '.join(present)}")
        result = run_for_test(self.config, self.path, self.variant)
        if self.expect_fail is not None:
            self.check_expected_failure(result)
        elif not result.passed:
            raise PktFailure(self.describe(result))

    def check_expected_failure(self, result: RunResult) -> None:
        assert self.expect_fail is not None
        if result.passed:
            raise PktFailure(f"expected a failure matching /{self.expect_fail}/, but the script "
                             f"passed")
        if not re.search(self.expect_fail, result.message):
            raise PktFailure(f"expected a failure matching /{self.expect_fail}/, got:\n"
                             f"{self.describe(result)}")
        if result.pcap:
            Path(result.pcap).unlink(missing_ok=True)

    @staticmethod
    def describe(result: RunResult) -> str:
        parts = [result.message or f"exit status {result.exit_status}"]
        if result.line is not None:
            parts.append(f"script line: {result.line}")
        if result.expected:
            parts.append(f"expected: {result.expected}")
        if result.actual:
            parts.append(f"actual:   {result.actual}")
        if result.pcap and Path(result.pcap).exists():
            parts.append(f"pcap: {result.pcap}")
        if result.stdout.strip():
            parts.append(f"--- engine stdout ---\n{result.stdout.rstrip()}")
        return "\n".join(parts)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, PktFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.name}[{self.variant}]"
