"""Adapter for a real upstream ``packetdrill`` binary: run it isolated, parse what it prints.

Upstream's output is the interface (§9), so the parser works from its documented formats; the
structured result is the same :class:`RunResult` the builtin engine produces.
"""

from __future__ import annotations

import re
import time

from .loader import CliOptions
from .netenv import run_child
from .result import RunResult

# Our own extensions never reach the binary; --tolerance_scale is folded into
# --tolerance_usecs by the caller.
_PRIVATE = {"tolerance_scale", "pcap", "result_json"}
_LOCATED = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+): (?P<text>.*)$", re.M)
# Upstream needs its own namespace too; `lo` up like its run_all.py wrapper.
_NETNS_WRAPPER = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def upstream_argv(binary: str, path: str, options: CliOptions, base_tolerance: int | None
                  ) -> list[str]:
    """The binary's command line for ``options`` (extensions removed or translated)."""
    argv = [binary]
    scale = 1.0
    for name, value in options:
        if name == "tolerance_scale" and value is not None:
            scale = float(value)
        elif name == "verbose":
            argv.append("-v")
        elif name not in _PRIVATE and not (name == "tolerance_usecs" and base_tolerance):
            argv.append(f"--{name}" if value is None else f"--{name}={value}")
    if scale != 1.0 or base_tolerance:
        argv.append(f"--tolerance_usecs={int((base_tolerance or 4000) * scale)}")
    argv.append(path)
    return argv


def parse_output(path: str, status: int, stdout: str, stderr: str) -> RunResult:
    """Turn upstream's exit status and output into a :class:`RunResult`."""
    result = RunResult(path, status == 0, backend="upstream", exit_status=status,
                       stdout=stdout, stderr=stderr)
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


def run_upstream(binary: str, path: str, options: CliOptions, base_tolerance: int | None,
                 timeout: float) -> RunResult:
    """Run the binary in a fresh namespace, from the script's folder like upstream's corpus
    runner (scripts name ``../common/defaults.sh``-style paths), and parse its output."""
    argv = _NETNS_WRAPPER + upstream_argv(binary, path, options, base_tolerance)
    started = time.monotonic()
    child = run_child(argv, path, timeout)
    stderr = child.stderr + (f"\n{path}: timed out after {timeout:.0f} s" if child.timed_out
                             else "")
    result = parse_output(path, child.returncode, child.stdout, stderr)
    result.duration = time.monotonic() - started
    return result
