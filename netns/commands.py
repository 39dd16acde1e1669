# SPDX-License-Identifier: GPL-2.0-only
"""Run a program to completion, in the root or inside a test namespace, like the selftests do.

``cmd()`` captures the output and raises :class:`CmdError` (command + stderr) unless told not
to. Only tools without a netlink API (tcpdump, nstat, ss, ethtool, ping, tc, iptables, nft,
sysctl) go through here; links, addresses and routes use pyroute2. Background processes are
the process core's (:mod:`netregress.process`), which also says why ``cmd()`` does without its
PDEATHSIG.

Inside a namespace the command is reported as ``ip netns exec NS …`` (what reproduces it by
hand) but started without ``ip``: a thread of ours enters the namespace and starts the tool
there (:func:`netregress.netns_entry.in_netns`), one exec instead of two and no mount namespace,
the cheapest way into a namespace, which matters most in a TCG guest, where every exec is
slow. The one thing that differs is /sys, which still shows the initial namespace's
devices; a command line naming /sys therefore starts through the process core, whose child
mounts a /sys of the namespace as ``ip netns exec`` does.
"""

import subprocess
from dataclasses import dataclass

from netregress.netns_entry import in_netns
from netregress.process import Process
from netregress.programs import Argv, command_line, program
from netregress.spans import span

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


def _start(args: list[str], ns: str | None, stdin: int | None) -> "subprocess.Popen[bytes]":
    """The running command: in the root, entered by a thread, or forked with its own /sys."""
    out = subprocess.PIPE
    if ns is None:
        return subprocess.Popen(args, stdin=stdin, stdout=out, stderr=out)
    if any("/sys" in arg for arg in args):
        return Process(args, ns=ns, stdin=stdin, stdout=out, stderr=out)
    return in_netns(ns, lambda: subprocess.Popen(args, stdin=stdin, stdout=out, stderr=out))


def _text(data: bytes) -> str:
    """Decoded as ``subprocess.run(text=True, errors="replace")`` would (universal newlines)."""
    return data.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


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
    with span("commands"):
        return _cmd(argv, ns, check, timeout, input)


def _cmd(argv: Argv, ns: str | None, check: bool, timeout: float, input: str | None) -> CmdResult:
    args = program(argv)
    full = command_line(args, ns)
    with _start(args, ns, None if input is None else subprocess.PIPE) as proc:
        try:
            out, err = proc.communicate(None if input is None else input.encode(), timeout)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.communicate()
            raise CmdError(full, -1, "", f"timed out after {timeout}s", ns) from exc
        except BaseException:  # Ctrl-C: never leave the command running behind us
            proc.kill()
            raise
    stdout, stderr = _text(out), _text(err)
    result = CmdResult(full, proc.returncode, stdout, stderr)
    if check and not result.ok:
        raise CmdError(full, proc.returncode, stdout, stderr, ns)
    return result
