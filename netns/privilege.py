# SPDX-License-Identifier: GPL-2.0-only
"""What this process may do: create network namespaces, and act as root of the initial ones.

Two levels matter, and a test asks for the one it needs instead of the whole session asking
for root up front:

- *namespaces*: CAP_NET_ADMIN and CAP_SYS_ADMIN in our user namespace. Root has them; so does
  a normal user inside a user namespace it created (``scripts/netregress`` run as a normal
  user, see :mod:`netns.rootless`). Everything inside namespaces we own works then: veth,
  bridge, vxlan, tcpdump, nstat, ss, per-namespace sysctls.
- *initial root*: root in the initial user namespace. Only it can load a kernel module, open a
  device node the machine reserves for root (``/dev/net/tun`` is often ``0600 root``), change a
  root-namespace-only knob or boot a VM. Without it such a test is skipped with the reason.

Answers are cached for the process: they cannot change while it runs.
"""

import functools
import os
import stat

from .errors import NotPrivileged

_CAP_NET_ADMIN = 12
_CAP_SYS_ADMIN = 21
# The uid_map of the initial user namespace: every uid maps to itself.
_IDENTITY_MAP = ["0", "0", "4294967295"]
TUN_DEVICE = "/dev/net/tun"
ROOT_PREFIX = "needs root in the initial namespace"


def _effective_caps() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


@functools.cache
def in_initial_user_namespace() -> bool:
    """True unless this process runs inside a user namespace (its uid_map is not identity).

    A kernel built without ``CONFIG_USER_NS`` (``scripts/build-kernel``'s own fragment leaves it
    out) has no ``uid_map`` at all: it has only the initial user namespace, so the answer is
    trivially yes.
    """
    try:
        with open("/proc/self/uid_map", encoding="ascii") as f:
            return f.read().split() == _IDENTITY_MAP
    except FileNotFoundError:
        return True


@functools.cache
def namespace_problem() -> str | None:
    """Why this process cannot create network namespaces, or None if it can."""
    caps = _effective_caps()
    missing = [
        name
        for bit, name in ((_CAP_NET_ADMIN, "CAP_NET_ADMIN"), (_CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
        if not caps >> bit & 1
    ]
    if not missing:
        return None
    return (
        f"netregress needs root or a user namespace ({' and '.join(missing)} missing): "
        f"it creates network namespaces. Run `scripts/netregress` (as root, or as a normal "
        f"user where the kernel allows unprivileged user namespaces), or run pytest as root."
    )


def require_namespaces() -> None:
    """Raise :class:`NotPrivileged` with the fix when namespaces cannot be created."""
    problem = namespace_problem()
    if problem is not None:
        raise NotPrivileged(problem)


def is_initial_root() -> bool:
    """Root of the initial namespaces: may load modules, open root-only devices, boot VMs."""
    return os.geteuid() == 0 and in_initial_user_namespace() and namespace_problem() is None


def initial_root_reason(why: str) -> str | None:
    """'needs root in the initial namespace: <why>' unless this process is that root."""
    return None if is_initial_root() else f"{ROOT_PREFIX}: {why}"


def tun_problem() -> str | None:
    """Why this process cannot open the tun device, or None if it can (or is initial root).

    Whether a user may open ``/dev/net/tun`` is the machine's choice (its mode), not the
    kernel's, so the reason names the node's mode (not its owner: inside a user namespace
    root's uid shows as the unmapped overflow uid).
    """
    if is_initial_root() or os.access(TUN_DEVICE, os.R_OK | os.W_OK):
        return None
    try:
        info = os.stat(TUN_DEVICE)
    except FileNotFoundError:
        return f"{TUN_DEVICE} does not exist (kernel without tun, or no /dev)"
    return initial_root_reason(
        f"opens {TUN_DEVICE} ({stat.filemode(info.st_mode)}), which "
        f"this machine does not let other users open"
    )
