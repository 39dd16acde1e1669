"""Run programs, in the root or inside a test namespace, the way the kernel selftests do.

``cmd()`` runs to completion and raises :class:`CmdError` (command + stderr) unless told
not to; ``spawn()`` starts a background process that dies with us (PR_SET_PDEATHSIG) and is
stopped by PID. Only tools without a netlink API (tcpdump, nstat, ss, ethtool, ping, tc,
iptables, nft, sysctl) go through here; links, addresses and routes use pyroute2.
"""

import ctypes
import shlex
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from .errors import CmdError, MissingTool

# Which Debian package provides a tool, for the "how to fix it" part of MissingTool.
_PACKAGES = {
    "ip": "iproute2", "ss": "iproute2", "nstat": "iproute2", "tc": "iproute2",
    "bridge": "iproute2", "tcpdump": "tcpdump", "ethtool": "ethtool",
    "iptables": "iptables", "nft": "nftables", "ping": "iputils-ping",
    "sysctl": "procps", "iperf3": "iperf3", "modprobe": "kmod",
}

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)

Argv = Sequence[str] | str


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


def require_tool(name: str) -> str:
    """Absolute path of *name*, or MissingTool telling the user which package to install."""
    path = shutil.which(name)
    if path is None:
        pkg = _PACKAGES.get(name, name)
        raise MissingTool(f"'{name}' is not installed (Debian package {pkg}); "
                          f"run scripts/setup to install everything netregress needs")
    return path


def _argv(argv: Argv, ns: str | None) -> list[str]:
    args = shlex.split(argv) if isinstance(argv, str) else list(argv)
    if not args:
        raise ValueError("empty command")
    require_tool(args[0])
    if ns is None:
        return args
    return [require_tool("ip"), "netns", "exec", ns, *args]


def cmd(argv: Argv, *, ns: str | None = None, check: bool = True, timeout: float = 60,
        input: str | None = None) -> CmdResult:
    """Run *argv* (in netns *ns* if given) to completion and capture its output.

    Raises CmdError with the command and its stderr when it fails and *check* is true,
    so a test failure reads like the shell session that would reproduce it.
    """
    full = _argv(argv, ns)
    try:
        proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                              input=input, errors="replace")
    except subprocess.TimeoutExpired as exc:
        raise CmdError(full, -1, "", f"timed out after {timeout}s", ns) from exc
    result = CmdResult(full, proc.returncode, proc.stdout, proc.stderr)
    if check and not result.ok:
        raise CmdError(full, proc.returncode, proc.stdout, proc.stderr, ns)
    return result


def _die_with_parent() -> None:
    """preexec_fn: the child gets SIGKILL when we die, even by SIGKILL, so nothing leaks."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Process:
    """A background process we started; stopped by its PID only, never by name."""

    def __init__(self, argv: Argv, *, ns: str | None = None,
                 stdout: int | IO[Any] = subprocess.DEVNULL,
                 stderr: int | IO[Any] = subprocess.PIPE) -> None:
        self.argv = _argv(argv, ns)
        self.ns = ns
        self.popen = subprocess.Popen(self.argv, stdout=stdout, stderr=stderr,
                                      stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 5) -> int:
        """Signal the process, wait for it, escalate to SIGKILL; returns its exit status."""
        if self.running():
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        return self.popen.returncode


def spawn(argv: Argv, *, ns: str | None = None, **kwargs: int | IO[Any]) -> Process:
    """Start *argv* in the background (in netns *ns*); see :class:`Process`."""
    return Process(argv, ns=ns, **kwargs)
