"""Exceptions that carry a message a user can act on.

Every failure a user can cause (missing tool, no privileges, bad input, a kernel without a
feature) is raised as a :class:`NetregressError` subclass so the CLI and the pytest plugin can
print one clear line instead of a traceback.
"""


class NetregressError(Exception):
    """Base class: the message alone must tell the user what went wrong and what to do."""


class CmdError(NetregressError):
    """A command exited non-zero; the message names the command, namespace and stderr."""

    def __init__(self, argv: list[str], returncode: int, stdout: str, stderr: str,
                 ns: str | None = None) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.ns = ns
        where = f" in netns {ns}" if ns else ""
        detail = (stderr or stdout).strip()
        super().__init__(f"command failed{where} (exit {returncode}): {' '.join(argv)}"
                         + (f"\n{detail}" if detail else ""))


class MissingTool(NetregressError):
    """A program the suite needs is not installed."""


class NotPrivileged(NetregressError):
    """The process lacks root / CAP_NET_ADMIN / CAP_SYS_ADMIN."""


class FeatureMissing(NetregressError):
    """The running kernel lacks a feature (ipip, gre, netem, …) a case needs."""
