# SPDX-License-Identifier: GPL-2.0-only
"""Backend choice (builtin engine or an upstream binary) and isolated runs for runners.

Both backends return :class:`RunResult`, so the CLI and the pytest plugin do not care which
one ran. :func:`run_isolated` always uses a child process: the engine moves its process into
a new network namespace, which a test runner's own process must never do.
"""

import os
import shutil
import tempfile
import time
from dataclasses import dataclass

from netregress.spans import add, span

from . import engine_process
from .config import Config
from .errors import PacketdrillError, UsageError
from .loader import CliOptions, load_config
from .result import RunResult
from .tolerance import Tolerance
from .upstream import run_upstream

DEFAULT_TIMEOUT = 180.0  # like upstream's run_all.py: a blocking call can hang the engine


@dataclass
class Backend:
    """``name`` is ``builtin`` or ``upstream``; ``binary`` the upstream binary's path."""

    name: str
    binary: str = ""

    def run(self, path: str, options: CliOptions, timeout: float = DEFAULT_TIMEOUT) -> RunResult:
        """Run in this process (builtin: the process enters a new namespace). The result's
        ``tolerance`` is the one the script and ``options`` give, for either backend."""
        if self.name == "builtin":
            from .engine import run_script

            return run_script(path, options)
        return run_upstream(self.binary, path, options, _config_for_binary(path, options), timeout)


def _config_for_binary(path: str, options: CliOptions) -> Config:
    """The config of a run the upstream binary makes: its option lines and ``options``,
    parsed once here for the adapter. A script our parser rejects gets the defaults (the
    binary, which is right until proven otherwise, reports what it makes of the script)."""
    try:
        return load_config(path, options)
    except PacketdrillError:
        return Config()


def choose_backend(choice: str | None) -> Backend:
    """``builtin`` (default), ``auto`` (``packetdrill`` on PATH if any) or a binary path."""
    choice = choice or os.environ.get("PACKETDRILL") or "builtin"
    if choice == "builtin":
        return Backend("builtin")
    if choice == "auto":
        found = upstream_on_path()
        return Backend("upstream", found) if found else Backend("builtin")
    if not (os.path.isfile(choice) and os.access(choice, os.X_OK)):
        raise UsageError(f"packetdrill binary not found or not executable: {choice}")
    return Backend("upstream", choice)


def upstream_on_path() -> str | None:
    """The first ``packetdrill`` on PATH that is not our own console script.

    Ours is installed as ``packetdrill`` too (a drop-in for the kernel's ksft_runner.sh);
    taking it for the upstream binary would mislabel the builtin engine's verdicts and, with
    ``PACKETDRILL=auto`` in the environment, make the CLI start itself forever. pip writes
    console scripts as a few lines of Python that import the entry point's module."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        found = shutil.which("packetdrill", path=folder or ".")
        if found and not _is_our_console_script(found):
            return found
    return None


def _is_our_console_script(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(1024)
    except OSError:
        return False
    return head.startswith(b"#!") and b"packetdrill.cli" in head


def run_isolated(
    backend: Backend,
    path: str,
    options: CliOptions,
    policy: Tolerance | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> RunResult:
    """Run one script in a child process (and so its own namespace), capturing output.

    ``policy`` is the runner's timing policy: its late slack, and where that came from, joins
    the base tolerance the script and ``options`` set. The result's ``tolerance`` is the one
    the run was judged by."""
    if policy is None:
        return _run_child(backend, os.path.abspath(path), options, timeout)
    result = _run_child(backend, os.path.abspath(path), options + policy.slack_options(), timeout)
    result.tolerance = result.tolerance.with_slack_of(policy)
    return result


def _run_child(backend: Backend, path: str, options: CliOptions, timeout: float) -> RunResult:
    if backend.name != "builtin":
        return backend.run(path, options, timeout)
    fd, json_path = tempfile.mkstemp(prefix="netregress-pd-", suffix=".json")
    os.close(fd)
    started = time.monotonic()
    try:
        with span("engine-run"):
            child = engine_process.run(path, options, json_path, os.path.dirname(path), timeout)
        if child.timed_out:
            return RunResult(
                path,
                False,
                f"{path}: timed out after {timeout:.0f} s",
                stdout=child.stdout,
                stderr=child.stderr,
                exit_status=1,
                duration=time.monotonic() - started,
            )
        try:
            with open(json_path) as handle:
                result = RunResult.from_json(handle.read())
        except (OSError, ValueError, TypeError):
            result = RunResult(
                path,
                False,
                child.stderr.strip() or f"{path}: engine exited with status {child.returncode}",
                exit_status=child.returncode or 1,
            )
    finally:
        os.unlink(json_path)
    for kind, seconds in result.phases.items():
        add(f"engine:{kind}", seconds)
    stdout, stderr = child.stdout, child.stderr
    result.stdout, result.stderr = stdout, stderr
    result.duration = time.monotonic() - started
    return result
