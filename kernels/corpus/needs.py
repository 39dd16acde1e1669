# SPDX-License-Identifier: GPL-2.0-only
"""What a corpus script needs from the kernel's sysctls, and whether this kernel gives it.

Why a probe and not a version table: the knobs a script sets in its init commands
(``sysctl -q net.ipv4.tcp_ecn=3`` for AccECN, ``set_sysctls.py /proc/sys/...=...``) are the
features it needs, and a kernel says itself whether it has them: a value it rejects
(``EINVAL``: 6.18 takes ``tcp_ecn`` 0-2 only) or a knob it lacks (``ENOENT``). Such a script
cannot run as written there, so its items are skips naming the knob, the value and the
kernel's answer, never failures and never passes. The probe writes each value once in a
throw-away network namespace of its own (a child process), so nothing of ours changes.

The congestion control the corpus's ``defaults.sh`` sets for every script is a need of
another kind: a namespace may set only what the host's ``tcp_allowed_congestion_control``
lists (``EPERM`` otherwise), and then every script runs under the host's default instead. A
failure there is not judged (an XFAIL saying why); a pass is still a pass.
"""

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kernels.errors import KernelsError

_BLOCK = re.compile(r"`([^`]*)`", re.S)
_SYSCTL = re.compile(r"\bsysctl\s+(?:-[a-z]+\s+)*(net[./][\w./]+)=([^\s\"'`$\\]+)(?=\s|$)")
_PROC = re.compile(r"/proc/sys/(net/[\w/]+)=([^\s\"'`$\\]+)(?=\s|$)")
_CONGESTION = re.compile(r"\bsysctl\s+(?:-[a-z]+\s+)*net\.ipv4\.tcp_congestion_control=(\w+)")
CONGESTION_KNOB = "net/ipv4/tcp_congestion_control"
_TIMEOUT = 30.0

_CHILD = Path(__file__).with_name("sysctl_child.py")  # run in its own network namespace
ARRIVALS = Path(__file__).with_name("arrivals.toml")


def knob_settings(text: str) -> list[str]:
    """``knob=value`` (a /proc/sys path, slashes) for every literal sysctl value a script's
    init commands set (values computed by the shell are left out: they are buffer sizes)."""
    found: list[str] = []
    for block in _BLOCK.findall(text):
        for knob, value in [*_SYSCTL.findall(block), *_PROC.findall(block)]:
            setting = f"{knob.replace('.', '/')}={value}"
            if setting not in found:
                found.append(setting)
    return found


def default_congestion(corpus: Path) -> str | None:
    """The congestion control the corpus's ``defaults.sh`` sets for every script, if any."""
    try:
        match = _CONGESTION.search((corpus / "defaults.sh").read_text())
    except OSError:
        return None
    return match.group(1) if match else None


class KnobProbe:
    """Each setting probed once per process (the kernel's answer does not change mid-run)."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}

    def refused(self, settings: list[str]) -> dict[str, str]:
        """The settings this kernel refuses in a fresh namespace, each with its errno name."""
        todo = [setting for setting in settings if setting not in self.answers]
        if todo:
            self.answers.update(_probe(todo))
        return {setting: self.answers[setting] for setting in settings if self.answers[setting]}


def _probe(settings: list[str]) -> dict[str, str]:
    try:
        proc = subprocess.run(
            ["unshare", "--net", sys.executable, str(_CHILD), *settings],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            check=False,
        )
        answers: dict[str, str] = json.loads(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise KernelsError(f"cannot probe the kernel's sysctls in a namespace: {exc}") from None
    return answers


@dataclass(frozen=True)
class Arrival:
    """When upstream began to take a setting: the release, and how a reason names it."""

    release: tuple[int, ...]
    said: str  # 'release (short commit "subject")'


@cache
def arrivals() -> dict[tuple[str, str], Arrival]:
    """When upstream began to take each setting (arrivals.toml), keyed by (dotted knob, value),
    value ``""`` for the knob itself."""
    known: dict[tuple[str, str], Arrival] = {}
    for entry in tomllib.loads(ARRIVALS.read_text())["arrival"]:
        release = tuple(int(part) for part in entry["release"].split("."))
        said = f'{entry["release"]} ({entry["commit"][:12]} "{entry["subject"]}")'
        for value in entry.get("values", [""]):
            known[(entry["knob"], value)] = Arrival(release, said)
    return known


def why_skipped(refused: dict[str, str]) -> str:
    """The skip reason for a script whose init settings this kernel refuses: each setting, the
    kernel's answer and, where arrivals.toml knows it, the release and commit that brought it."""
    said: list[str] = []
    for setting, errno in refused.items():
        knob, _, value = setting.partition("=")
        dotted = knob.replace("/", ".")
        if errno == "ENOENT":
            answer, since = "no such sysctl", arrivals().get((dotted, ""))
            answer += f", added upstream in {since.said}" if since else ""
        else:
            answer, since = f"rejected ({errno})", arrivals().get((dotted, value))
            answer += f", taken upstream since {since.said}" if since else ""
        said.append(f"{dotted}={value}: {answer}")
    return "this kernel lacks what the script's init commands set: " + "; ".join(said)


def predated(settings: list[str], version: tuple[int, ...]) -> str:
    """The skip reason for a script that sets a value this kernel takes but predates (``""``:
    none): before 6.18, ``tcp_ecn`` had no upper limit, so 5.10 and 6.1 take the AccECN
    modes 3-5 and run the script with classic ECN, failing on every line that tells the two
    apart. Only a value's arrival counts: a knob a kernel has is its own (6.1.59 has
    ``tcp_shrink_window`` of 6.5, backported), and one it lacks is answered by the probe."""
    early = [
        f"{knob.replace('/', '.')}={value}, taken upstream since {since.said}"
        for setting in settings
        for knob, _, value in [setting.partition("=")]
        if value
        and (since := arrivals().get((knob.replace("/", "."), value))) is not None
        and version < since.release
    ]
    if not early:
        return ""
    kernel = ".".join(str(part) for part in version)
    return (
        f"this kernel ({kernel}) predates what the script's init commands set: "
        + "; ".join(early)
        + "; it takes the value without the feature behind it"
    )
