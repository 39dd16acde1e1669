# SPDX-License-Identifier: GPL-2.0-only
"""Run a command as a normal user inside a user + network + mount namespace of its own.

Kernel developers run the suite on their laptops as themselves, and CI runners often give no
root. Where the kernel allows unprivileged user namespaces, ``scripts/netregress`` re-runs
pytest through here: ``unshare`` makes a user namespace (the user's own uid mapped to itself,
with every capability kept as ambient, so tools such as tcpdump keep running as that user and
the files they write belong to them), a network namespace (so even an accidental packet stays
in one we own) and a mount namespace, where a private tmpfs on ``/run/netns`` lets ``ip netns``
and pyroute2 name the test namespaces without touching the machine's. Tests that need root of
the initial namespace (loading a module, a root-only device, a global knob) then skip with that
reason (:mod:`netns.privilege`).

    python -m netns.rootless -- COMMAND [ARG...]

The availability check only *reads* the sysctls that gate user namespaces; it never changes
them.
"""

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from netregress.errors import NetregressError

_INSIDE = "--inside"
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
# The sysctls that may forbid unprivileged user namespaces, and the value that does.
_GATES = (
    (
        "/proc/sys/kernel/unprivileged_userns_clone",
        "0",
        "kernel.unprivileged_userns_clone = 0 (Debian's switch for unprivileged user namespaces)",
    ),
    ("/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces = 0"),
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "kernel.apparmor_restrict_unprivileged_userns = 1 (AppArmor confines user namespaces)",
    ),
)
NETNS_DIR = Path("/run/netns")


def userns_problem(as_user: Sequence[str] = ()) -> str | None:
    """Why this kernel refuses unprivileged user namespaces, or None if it allows them.

    Reads the gating sysctls (never writes them), then tries one (through the *as_user*
    command prefix, when root asks for another user), because a security module can refuse
    what the sysctls allow."""
    for path, refusing, what in _GATES:
        try:
            value = Path(path).read_text(encoding="ascii").strip()
        except OSError:
            continue  # this kernel does not have the switch
        if value == refusing:
            return f"unprivileged user namespaces are disabled: {what}"
    unshare = shutil.which("unshare")
    if unshare is None:
        return "'unshare' is not installed (Debian package util-linux)"
    trial = subprocess.run(
        [*as_user, unshare, "--user", "--map-current-user", "--net", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if trial.returncode != 0:
        return f"unprivileged user namespaces are refused: {trial.stderr.strip()}"
    return None


def wrap(argv: list[str]) -> list[str]:
    """The command line that runs *argv* inside a fresh user + network + mount namespace."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise NetregressError("'unshare' is not installed (Debian package util-linux)")
    return [
        unshare,
        "--map-current-user",
        "--keep-caps",
        "--net",
        "--mount",
        "--",
        sys.executable,
        "-m",
        "netns.rootless",
        _INSIDE,
        "--",
        *argv,
    ]


def _mount_tmpfs(target: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", bytes(target), b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=0755") != 0:
        err = ctypes.get_errno()
        raise NetregressError(f"cannot mount a private tmpfs on {target}: {os.strerror(err)}")


def prepare_inside() -> None:
    """Inside the new namespaces: a private, empty /run/netns (a tmpfs on /run if the machine
    has no /run/netns yet, since only root may create it there), and ``lo`` up."""
    if NETNS_DIR.is_dir():
        _mount_tmpfs(NETNS_DIR)
    else:
        _mount_tmpfs(NETNS_DIR.parent)
        NETNS_DIR.mkdir()
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def main(args: list[str]) -> int:
    inside = bool(args) and args[0] == _INSIDE
    if inside:
        args = args[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m netns.rootless -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    try:
        if inside:
            prepare_inside()
            os.execvp(args[0], args)
        problem = userns_problem()
        if problem is not None:
            raise NetregressError(f"cannot run rootless: {problem}")
        os.execv(wrap(args)[0], wrap(args))
    except NetregressError as exc:
        print(f"netregress: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
