# SPDX-License-Identifier: GPL-2.0-only
"""Where a guest's time goes: timestamps the guest itself writes, one JSON object a line.

Why the guest writes them: under TCG the host cannot see when Python finished importing or
collecting; guessing from the host's side of the share hides the very costs worth cutting.
Every stamp is seconds on the guest's CLOCK_BOOTTIME (what `/proc/uptime` shows), so the
init's shell stamps and this pytest plugin's stamps share one clock and need no host sync.

Guest side: the init and `guest.sh` stamp boot, modules and process exit (`shell_stamp`);
`-p kernels.vm.phases` stamps pytest's own phases when NETREGRESS_PHASES names the log, and sums
each test's setup/call/teardown durations (pytest's own per-phase figures). Host side:
`read` gives them back; `scripts/bench-vm` turns them into the per-phase table.
"""

import json
import os
import resource
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from netregress import spans

ENV = "NETREGRESS_PHASES"
FILE = "phases.jsonl"  # in the output share, next to the JUnit file
WHENS = ("setup", "call", "teardown")


UPTIME = "$(cut -d' ' -f1 /proc/uptime)"


def shell_stamp(name: str, log: str, seconds: str = UPTIME) -> str:
    """A POSIX shell line appending stamp `name` to `log`: `seconds` (shell text), by default
    the uptime now."""
    return f'printf \'{{"phase":"{name}","t":%s}}\\n\' "{seconds}" >> {log}'


def _log_path() -> Path | None:
    path = os.environ.get(ENV)
    return Path(path) if path else None


def _write(entry: dict[str, object]) -> None:
    path = _log_path()
    if path is not None:
        with path.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")


def stamp(name: str) -> None:
    """Record that phase `name` ended now."""
    _write({"phase": name, "t": time.clock_gettime(time.CLOCK_BOOTTIME)})


def _process_start() -> float:
    """When this process was started, on the same clock (from /proc/self/stat, in ticks)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


class _Durations:
    """Per-test phase durations summed over the session, written once at its end."""

    def __init__(self) -> None:
        self.sums = dict.fromkeys(WHENS, 0.0)
        self.tests = 0
        self.slowest: list[tuple[float, str]] = []

    def add(self, report: pytest.TestReport) -> None:
        self.sums[report.when] += report.duration
        if report.when == "call":
            self.tests += 1
        self.slowest.append((report.duration, f"{report.when} {report.nodeid}"))

    def entry(self) -> dict[str, object]:
        top = sorted(self.slowest, reverse=True)[:10]
        return {"phase": "durations", "tests": self.tests, **self.sums,
                "slowest": [[round(seconds, 3), what] for seconds, what in top]}  # fmt: skip


_DURATIONS = _Durations()


def _controller(config: pytest.Config) -> bool:
    """Only the controlling process stamps; xdist workers' figures reach it as reports."""
    return _log_path() is not None and not hasattr(config, "workerinput")


# `-p` plugins are imported before entry points and conftests: now, pytest's core is up.
_IMPORTED = time.clock_gettime(time.CLOCK_BOOTTIME)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if _controller(config):
        _write({"phase": "python-start", "t": _process_start()})
        _write({"phase": "pytest-core", "t": _IMPORTED})
        stamp("plugins-imported")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if _controller(session.config):
        stamp("configured")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    if _controller(session.config):
        stamp("collected")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _log_path() is not None and report.when in WHENS:
        _DURATIONS.add(report)
        _ITEM_PHASES.setdefault(report.nodeid, {})[report.when] = report.duration


# The process that runs a test sees its phases' reports before its protocol ends.
_ITEM_PHASES: dict[str, dict[str, float]] = {}


def _cpu_seconds() -> tuple[float, float]:
    """CPU seconds of this process and of its children that ended (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """One line per test from the process that ran it: its phases' durations, the kinds of
    work inside them (netregress/spans.py), and the CPU it and its children burnt; a test whose
    wall time is mostly not CPU waited (timers, the script's own sleeps, the network)."""
    if _log_path() is None:
        return (yield)
    spans.take()
    cpu_before, children_before = _cpu_seconds()
    started = time.monotonic()
    result = yield
    wall = time.monotonic() - started
    cpu, children = _cpu_seconds()
    _write({
        "phase": "item", "nodeid": item.nodeid, "wall": round(wall, 4),
        **{when: round(seconds, 4) for when, seconds in _ITEM_PHASES.pop(item.nodeid, {}).items()},
        "cpu": round(cpu - cpu_before, 4), "children_cpu": round(children - children_before, 4),
        "spans": {kind: round(seconds, 4) for kind, seconds in sorted(spans.take().items())},
    })  # fmt: skip
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    result = yield
    if _controller(session.config):
        stamp("tests-done")
        _write(_DURATIONS.entry())
    return result


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _controller(config):
        stamp("finished")


@dataclass
class Log:
    """A guest's log read back: phase name → guest uptime seconds, the per-test sums, and
    each test's own line (:mod:`kernels.vm.item_profile` tables them)."""

    stamps: dict[str, float] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)
    slowest: list[tuple[float, str]] = field(default_factory=list)
    items: list[dict[str, object]] = field(default_factory=list)  # a line per test


def read(path: Path) -> Log:
    """The log at `path`; a missing file or a line cut short by a crash reads as absent."""
    log = Log()
    if not path.is_file():
        return log
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        if entry.get("phase") == "item":
            log.items.append(entry)
        elif entry.get("phase") == "durations":
            log.sums = {when: float(entry[when]) for when in WHENS if when in entry}
            log.slowest = [(float(seconds), str(what)) for seconds, what in entry["slowest"]]
        elif isinstance(entry.get("t"), int | float):
            log.stamps.setdefault(str(entry["phase"]), float(entry["t"]))
    return log
