# SPDX-License-Identifier: GPL-2.0-only
"""The structured outcome of one script run, identical for both backends.

The pytest plugin and other reports read this instead of parsing text, so the builtin engine
and the upstream-binary adapter must fill it the same way.
"""

import json
from dataclasses import asdict, dataclass, field

from .tolerance import Tolerance


@dataclass
class RunResult:
    script: str
    passed: bool
    message: str = ""  # the full diagnostic (first line is ``file:line: ...``)
    line: int | None = None  # script line of the failure, when there is one
    expected: str = ""  # ``script packet:`` dump
    actual: str = ""  # ``actual packet:`` dump
    pcap: str = ""  # pcap of the run (builtin engine only)
    stdout: str = ""
    stderr: str = ""
    backend: str = "builtin"
    exit_status: int = 0
    duration: float = 0.0
    late_usecs: int = 0  # worst lateness beyond the base tolerance of accepted events
    late_line: int | None = None  # the script line of that event
    late_event: str = ""  # that event and when it was due ("outbound packet expected at 0.300 s")
    timing_error: str = ""  # "early" / "late" when the run failed on a timing check
    late_error_usecs: int = 0  # how late beyond the base the event failing "late" was
    # An "early" failure that rests on the engine's own lag (runtime.Runtime.judge_time): the
    # lag; 0 otherwise, and always for the upstream binary, whose lag we cannot see.
    engine_behind_usecs: int = 0
    # A mismatching packet the kernel sent before a stimulus the script gives it first, which
    # the engine sent late (runtime.Runtime.overtaken_by): that lateness; 0 otherwise.
    overtaken_usecs: int = 0
    # The tolerance the run was judged by (script and command line, plus the runner's slack);
    # the default when the script never parsed.
    tolerance: Tolerance = field(default_factory=Tolerance)
    # Where the engine's process spent the run, seconds by kind (netregress/spans.py): parse,
    # netns, init scripts, the script itself, teardown … (the builtin engine only).
    phases: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "RunResult":
        data = json.loads(text)
        data["tolerance"] = Tolerance(**data["tolerance"])
        return cls(**data)
