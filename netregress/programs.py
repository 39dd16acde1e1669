# SPDX-License-Identifier: GPL-2.0-only
"""Which program a command runs, and how a report shows the command.

Why looked up before it starts: a missing tool is then a MissingTool naming the Debian package
that provides it, rather than a FileNotFoundError from deep inside subprocess.
"""

import shlex
import shutil
from collections.abc import Sequence

from .errors import MissingTool

Argv = Sequence[str] | str

# Which Debian package provides a tool, for the "how to fix it" part of MissingTool.
_PACKAGES = {
    "ip": "iproute2", "ss": "iproute2", "nstat": "iproute2", "tc": "iproute2",
    "bridge": "iproute2", "tcpdump": "tcpdump", "ethtool": "ethtool",
    "iptables": "iptables", "nft": "nftables", "ping": "iputils-ping",
    "sysctl": "procps", "iperf3": "iperf3", "modprobe": "kmod",
}  # fmt: skip


def require_tool(name: str) -> str:
    """Absolute path of *name*, or MissingTool telling the user which package to install."""
    path = shutil.which(name)
    if path is None:
        pkg = _PACKAGES.get(name, name)
        raise MissingTool(
            f"'{name}' is not installed (Debian package {pkg}); "
            f"run scripts/setup to install everything netregress needs"
        )
    return path


def program(argv: Argv) -> list[str]:
    """*argv* as a list (a string is split like a shell would), its program looked up first."""
    args = shlex.split(argv) if isinstance(argv, str) else list(argv)
    if not args:
        raise ValueError("empty command")
    require_tool(args[0])
    return args


def command_line(args: list[str], ns: str | None = None) -> list[str]:
    """The shell command that runs *args* (a :func:`program`'s list; inside netns *ns* if
    given): what a report shows.

    Inside a namespace that is ``ip netns exec NS …``, which a user can paste to reproduce a
    failure; netregress itself enters the namespace without starting ``ip``
    (:mod:`netregress.netns_entry`).
    """
    return args if ns is None else ["ip", "netns", "exec", ns, *args]
