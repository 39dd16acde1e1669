# SPDX-License-Identifier: GPL-2.0-only
"""Error types of the engine.

Every failure a user can cause (bad script, bad option, kernel misbehaviour) is one of these
exceptions, carrying the exact packetdrill-style text. The CLI and the pytest plugin print the
text and never a traceback, so tools that parse packetdrill output keep working. They share
netregress's one root, :class:`netregress.errors.NetregressError`, so every entry point treats them
alike.
"""

from netregress.errors import NetregressError


class PacketdrillError(NetregressError):
    """A failure whose ``str()`` is the complete diagnostic, ready for stderr."""

    def __init__(self, text: str, line: int | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.line = line

    def __str__(self) -> str:
        return self.text


class ScriptError(PacketdrillError):
    """A parse or semantic error, reported before anything runs (``file:line: message``)."""


class ConfigError(PacketdrillError):
    """A bad option value, from the command line or the script's option lines."""


class UsageError(PacketdrillError):
    """A command-line usage problem: the usage text follows the message."""


class RuntimeFailure(PacketdrillError):
    """A failure while the script runs (packet mismatch, syscall error, timing error...).

    ``expected``/``actual`` hold the ``script packet:``/``actual packet:`` dump lines when the
    failure was found while verifying a sniffed packet, so reports can show both.
    """

    def __init__(
        self, text: str, line: int | None = None, expected: str = "", actual: str = ""
    ) -> None:
        super().__init__(text, line)
        self.expected = expected
        self.actual = actual


class TimelineDrift(RuntimeFailure):
    """An outbound TCP timestamp that is right for when its packet left, but off the script's
    clock by how far this run's timeline fell behind the script's (relative times count from
    when the previous event was done, so a stalled machine shifts every later event, and the
    kernel's TS clock records the shift). Upstream fails such a run on its TS value; the
    policy calls it what it is: the machine's lateness, ``drift_usecs`` of it, not checkable.
    """

    def __init__(self, text: str, drift_usecs: int) -> None:
        super().__init__(text)
        self.drift_usecs = drift_usecs
