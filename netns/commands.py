"""Run a program to completion, in the root or inside a test namespace, like the selftests do.

``cmd()`` captures the output and raises :class:`CmdError` (command + stderr) unless told not
to. Only tools without a netlink API (tcpdump, nstat, ss, ethtool, ping, tc, iptables, nft,
sysctl) go through here; links, addresses and routes use pyroute2. Background processes are
the process core's (:mod:`netregress.process`), which also says why ``cmd()`` does without its
PDEATHSIG.
"""

import subprocess
from dataclasses import dataclass

from netregress.process import Argv, command_line

from .errors import CmdError


@dataclass(frozen=True)
class CmdResult:
    """What a finished command produced."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def cmd(
    argv: Argv,
    *,
    ns: str | None = None,
    check: bool = True,
    timeout: float = 60,
    input: str | None = None,
) -> CmdResult:
    """Run *argv* (in netns *ns* if given) to completion and capture its output.

    Raises CmdError with the command and its stderr when it fails and *check* is true,
    so a test failure reads like the shell session that would reproduce it.
    """
    full = command_line(argv, ns)
    try:
        proc = subprocess.run(
            full, capture_output=True, text=True, timeout=timeout, input=input, errors="replace"
        )
    except subprocess.TimeoutExpired as exc:
        raise CmdError(full, -1, "", f"timed out after {timeout}s", ns) from exc
    result = CmdResult(full, proc.returncode, proc.stdout, proc.stderr)
    if check and not result.ok:
        raise CmdError(full, proc.returncode, proc.stdout, proc.stderr, ns)
    return result
