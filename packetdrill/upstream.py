# SPDX-License-Identifier: GPL-2.0-only
"""Adapter for a real upstream ``packetdrill`` binary: run it isolated, parse what it prints.

Upstream's output is the interface (docs/packetdrill-language.md §11), so the parser works from
its documented formats; the structured result is the same :class:`RunResult` the builtin engine
produces.

Timing: the binary knows one symmetric ``--tolerance_usecs``; late-only slack cannot be said to
it, and widening that option would open the early side too (a retransmission that fires far too
soon would pass). So the binary always runs with the script's own base tolerance, and a late
timing error it reports is classified here; the policy (:func:`.timing.judge_run`) then
calls a late failure that the session's slack could explain "not checkable on this machine"
rather than a pass or a kernel failure.
"""

import re
import time

from .config import Config
from .loader import CliOptions
from .netenv import run_child
from .result import RunResult
from .tolerance import classify_message

# Our own extensions never reach the binary (late slack cannot be expressed to it, see above).
_PRIVATE = {"tolerance_late_usecs", "pcap", "result_json"}
_LOCATED = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+): (?P<text>.*)$", re.M)
# Upstream needs its own namespace too; `lo` up like its run_all.py wrapper.
_NETNS_WRAPPER = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def upstream_argv(binary: str, path: str, options: CliOptions) -> list[str]:
    """The binary's command line for ``options`` (our extensions removed)."""
    argv = [binary]
    for name, value in options:
        if name == "verbose":
            argv.append("-v")
        elif name not in _PRIVATE:
            argv.append(f"--{name}" if value is None else f"--{name}={value}")
    argv.append(path)
    return argv


def parse_output(path: str, status: int, stdout: str, stderr: str) -> RunResult:
    """Turn upstream's exit status and output into a :class:`RunResult`."""
    result = RunResult(
        path, status == 0, backend="upstream", exit_status=status, stdout=stdout, stderr=stderr
    )
    if status == 0:
        return result
    lines = [line for line in stderr.splitlines() if line.strip()]
    result.message = "\n".join(lines) if lines else f"{path}: exited with status {status}"
    located = _LOCATED.search(stderr)
    if located:
        result.line = int(located.group("line"))
    for line in lines:
        if line.startswith("script packet:"):
            result.expected = line
        elif line.startswith("actual packet:"):
            result.actual = line
    if status < 0:
        result.message += f"\n{path}: killed by signal {-status}"
    return result


def run_upstream(
    binary: str, path: str, options: CliOptions, cfg: Config, timeout: float
) -> RunResult:
    """Run the binary in a fresh namespace, from the script's folder like upstream's corpus
    runner (scripts name ``../common/defaults.sh``-style paths), and parse its output.

    ``cfg`` is the script's config as the caller parsed it from the script and ``options``:
    its tolerance tells how late a reported timing error was beyond the base, and is the
    tolerance the result reports (the binary itself only ever gets the base)."""
    argv = _NETNS_WRAPPER + upstream_argv(binary, path, options)
    started = time.monotonic()
    child = run_child(argv, path, timeout)
    stderr = child.stderr + (
        f"\n{path}: timed out after {timeout:.0f} s" if child.timed_out else ""
    )
    result = parse_output(path, child.returncode, child.stdout, stderr)
    result.tolerance = cfg.tolerance
    result.timing_error, result.late_error_usecs = classify_message(result.message, cfg.tolerance)
    result.duration = time.monotonic() - started
    return result
