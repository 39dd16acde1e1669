# SPDX-License-Identifier: GPL-2.0-only
"""What the corpus's own ``ksft_runner.sh`` would run for one script, learnt by running it.

Why run it instead of restating its arguments: the runner changes between kernels (6.12 runs
every script as IPv4 and IPv6; 7.2 adds IPv4-mapped-IPv6, reads the IP versions from the
script's ``--ip_version=`` lines, defines ``TFO_COOKIE_ZERO``, and turns a failure into an
XFAIL under ``KSFT_MACHINE_SLOW``). Running the corpus's runner, unmodified, with a
``packetdrill`` and an ``unshare`` of ours first on PATH that only write down their command
line, and a KTAP helper of ours that writes down each verdict function the runner calls,
gives exactly what that runner passes for that script on this machine, whatever its version.
Nothing runs in a namespace here and nothing reaches the network.
"""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from kernels.errors import KernelsError
from kernels.paths import cache_dir

RUNNER = "ksft_runner.sh"
# The runner sources this, relative to its own real path (tools/testing/selftests/...).
HELPERS = Path("../../kselftest/ktap_helpers.sh")
_LOG = "NETREGRESS_KSFT_LOG"  # read by the stand-ins below
_TIMEOUT = 30.0

# Our stand-ins (files of this package, run by path): a packetdrill that writes down its
# arguments and fails, an unshare that only runs its command, and the KTAP helpers that write
# down each verdict; all of them append to the file the variable `_LOG` names.
_STAND_INS = Path(__file__).parent / "stand_ins"
_BIN = _STAND_INS / "bin"
_KTAP = _STAND_INS / "ktap_helpers.sh"


@dataclass(frozen=True)
class Run:
    """One packetdrill run of the runner: its test name (the IP version), the arguments
    before the script, and how the runner counts a failure ("fail", or "xfail" when it says
    the machine is slow)."""

    name: str
    args: tuple[str, ...]
    on_failure: str


@dataclass(frozen=True)
class Plan:
    """Everything the runner does for one script: its runs, or why it runs none (it refused
    the script, or skipped it all)."""

    runs: tuple[Run, ...]
    refused: str = ""
    skipped: str = ""


def has_runner(corpus: Path) -> bool:
    """A folder is a corpus if it holds the runner and the helpers the runner sources."""
    return (corpus / RUNNER).is_file() and (corpus / HELPERS).is_file()


class RunnerProbe:
    """The runner's copy beside our KTAP helpers in a private temporary folder, built once for
    many scripts (close() or a ``with`` block removes it)."""

    def __init__(self, corpus: Path) -> None:
        if not (corpus / RUNNER).is_file():
            raise KernelsError(f"{corpus}: no {RUNNER} (not a kernel packetdrill corpus)")
        self.corpus = corpus
        self.root = Path(tempfile.mkdtemp(prefix="netregress-ksft-"))
        try:
            # The runner's copy sits where the real one does relative to the KTAP helpers.
            runner = self.root / "net" / "packetdrill" / RUNNER
            runner.parent.mkdir(parents=True)
            shutil.copyfile(corpus / RUNNER, runner)
            (self.root / "kselftest").mkdir()
            shutil.copyfile(_KTAP, self.root / "kselftest" / "ktap_helpers.sh")
            # a change of ours probes again (the plans are remembered by this too)
            self.stand_ins = b"".join(
                path.read_bytes() for path in (_BIN / "packetdrill", _BIN / "unshare", _KTAP)
            )
        except OSError as exc:
            self.close()
            raise KernelsError(f"cannot prepare the runner probe: {exc}") from None
        self.runner = runner

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "RunnerProbe":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def plan(self, script: Path, *, slow: bool) -> Plan:
        """What the runner does for `script` (a file of the corpus), with KSFT_MACHINE_SLOW
        set or not; remembered in the cache by the runner's and the script's contents (a
        probe costs a bash and a few tools, ~25 ms, for each of ~160 scripts at every
        collection otherwise)."""
        try:
            key = hashlib.sha256(
                b"\0".join(
                    [self.stand_ins, (self.corpus / RUNNER).read_bytes(), script.read_bytes()]
                )
                + (b"slow" if slow else b"")
            ).hexdigest()
        except OSError as exc:
            raise KernelsError(f"cannot read {script}: {exc.strerror}") from None
        memo = cache_dir("ksft", "plans") / f"{key}.json"
        try:
            return _plan_from_json(memo.read_text())
        except (OSError, ValueError, KeyError, TypeError):
            pass  # not probed yet (or unreadable): probe
        plan = self._probe(script, slow)
        memo.write_text(json.dumps(asdict(plan)))
        return plan

    def _probe(self, script: Path, slow: bool) -> Plan:
        log = self.root / "log"
        log.write_text("")
        env = {key: value for key, value in os.environ.items() if key != "KSFT_MACHINE_SLOW"}
        env["PATH"] = f"{_BIN}:{env.get('PATH', '/usr/bin:/bin')}"
        env[_LOG] = str(log)
        if slow:
            env["KSFT_MACHINE_SLOW"] = "1"
        try:
            subprocess.run(
                ["bash", str(self.runner), script.name],
                cwd=self.corpus,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise KernelsError(f"{self.corpus / RUNNER} {script.name}: {exc}") from None
        return _read_log(log.read_text(), script.name)


def _plan_from_json(text: str) -> Plan:
    raw = json.loads(text)
    runs = tuple(Run(run["name"], tuple(run["args"]), run["on_failure"]) for run in raw["runs"])
    return Plan(runs, raw["refused"], raw["skipped"])


def _read_log(text: str, script: str) -> Plan:
    """Pair each recorded packetdrill command line with the verdict the runner gave it."""
    runs: list[Run] = []
    pending: tuple[str, ...] | None = None
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        if kind == "run":
            args = tuple(rest.split("\t"))
            pending = args[:-1] if args and args[-1] == script else args
        elif kind in ("fail", "xfail", "pass") and pending is not None:
            runs.append(Run(rest, pending, kind if kind != "pass" else "fail"))
            pending = None
        elif kind == "error":
            return Plan(tuple(runs), refused=rest)
        elif kind == "skip-all":
            return Plan(tuple(runs), skipped=rest)
    if not runs:
        return Plan((), refused=f"the runner ran no packetdrill for {script}")
    return Plan(tuple(runs))


def command_line(run: Run, script: str) -> str:
    """The packetdrill command the kernel's runner would type, for reports."""
    return shlex.join(["packetdrill", *run.args, script])
