# SPDX-License-Identifier: GPL-2.0-only
"""The namespace library's exceptions: each a :class:`netregress.errors.NetregressError`, so a
user sees one clear line (the root, ``MissingTool`` and the CLI contract live there)."""

from netregress.errors import NetregressError


class CmdError(NetregressError):
    """A command exited non-zero; the message names the command, namespace and stderr."""

    def __init__(
        self, argv: list[str], returncode: int, stdout: str, stderr: str, ns: str | None = None
    ) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.ns = ns
        where = f" in netns {ns}" if ns else ""
        detail = (stderr or stdout).strip()
        super().__init__(
            f"command failed{where} (exit {returncode}): {' '.join(argv)}"
            + (f"\n{detail}" if detail else "")
        )


class NotPrivileged(NetregressError):
    """The process lacks root / CAP_NET_ADMIN / CAP_SYS_ADMIN."""


class FeatureMissing(NetregressError):
    """The running kernel lacks a feature (ipip, gre, netem, …) a case needs."""
