# SPDX-License-Identifier: GPL-2.0-only
"""Sysctls as a network namespace sees them, read and written without starting a process.

Why not ``ip netns exec NS sysctl``: the cases set a few knobs per namespace and the library
reads each first and restores it after: hundreds of ``sysctl`` processes per run of the
suite, each two execs and a mount namespace, which a TCG guest pays dearly for.
``/proc/sys/net`` shows the namespace of the *thread* that opens a file there, so a
short-lived thread enters the namespace (``setns`` moves only the calling thread), opens the
file, reads or writes, and ends: no other thread of the test ever changes namespace.
Failures raise :class:`CmdError` worded like the ``sysctl`` command's, so a failure reads like
the command that reproduces it.
"""

from netregress.netns_entry import in_netns

from .errors import CmdError


def _path(key: str) -> str:
    """``net.ipv4.ip_forward`` → ``/proc/sys/net/ipv4/ip_forward`` (a key with slashes, as
    ``sysctl`` accepts for names holding dots, is taken as a path)."""
    return "/proc/sys/" + (key if "/" in key else key.replace(".", "/"))


def read(ns_name: str, key: str) -> str:
    """The value of *key* inside the namespace (what ``sysctl -n KEY`` prints there)."""

    def work() -> str:
        with open(_path(key), encoding="ascii") as handle:
            return handle.read().strip()

    try:
        return in_netns(ns_name, work)
    except OSError as exc:
        raise CmdError(
            ["sysctl", "-n", key],
            255,
            "",
            f"sysctl: cannot read {_path(key)}: {exc.strerror}",
            ns_name,
        ) from exc


def write(ns_name: str, values: dict[str, str]) -> None:
    """Set every key to its value inside the namespace, in order (``sysctl -w K=V …``)."""

    def work() -> None:
        for key, value in values.items():
            try:
                with open(_path(key), "w", encoding="ascii") as handle:
                    handle.write(value)
            except OSError as exc:
                raise CmdError(
                    ["sysctl", "-w", f"{key}={value}"],
                    255,
                    "",
                    f"sysctl: cannot set {_path(key)}: {exc.strerror}",
                    ns_name,
                ) from exc

    try:
        in_netns(ns_name, work)
    except OSError as exc:  # the namespace itself could not be entered
        raise CmdError(
            ["sysctl", "-w", *(f"{k}={v}" for k, v in values.items())],
            255,
            "",
            f"sysctl: {exc}",
            ns_name,
        ) from exc
