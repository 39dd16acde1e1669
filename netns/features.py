# SPDX-License-Identifier: GPL-2.0-only
"""Does the running kernel support X? Answered by trying it, never by reading configs.

Each probe creates (and deletes) the thing in a scratch namespace, so a kernel with the
feature as a loadable module answers yes too. Answers are cached for the process: a pytest
run asks once per worker.
"""

import functools
import os
import platform
from collections.abc import Callable

from netregress.errors import NetregressError

from . import privilege
from .errors import CmdError
from .namespace import Namespace


def _link(kind: str, *args: str) -> Callable[[Namespace], None]:
    def probe(ns: Namespace) -> None:
        ns.run(["ip", "link", "add", "probe0", "type", kind, *args])
        ns.run(["ip", "link", "del", "probe0"])

    return probe


def _netem(ns: Namespace) -> None:
    ns.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"])


def _tun(ns: Namespace) -> None:
    ns.run(["ip", "tuntap", "add", "probe0", "mode", "tun"])


def _nft(ns: Namespace) -> None:
    ns.run(["nft", "add", "table", "inet", "probe"])


def _iptables(ns: Namespace) -> None:
    ns.run(["iptables", "-w", "-L", "FORWARD", "-n"])


PROBES: dict[str, Callable[[Namespace], None]] = {
    "veth": _link("veth", "peer", "name", "probe1"),
    "bridge": _link("bridge"),
    "dummy": _link("dummy"),
    "vxlan": _link("vxlan", "id", "1", "dstport", "4789"),
    # With a remote: "any/any" would collide with the fallback tunl0/gre0 ("File exists").
    "ipip": _link("ipip", "remote", "192.0.2.1"),
    "gre": _link("gre", "remote", "192.0.2.1"),
    "geneve": _link("geneve", "id", "1", "remote", "192.0.2.1"),
    "tun": _tun,
    "netem": _netem,
    "nftables": _nft,
    "iptables": _iptables,
}


@functools.cache
def probe(feature: str) -> str | None:
    """None if *feature* works on this kernel, else the kernel's refusal as text (or, in a user
    namespace, why only root of the initial namespace could use it)."""
    try:
        check = PROBES[feature]
    except KeyError:
        raise NetregressError(
            f"unknown kernel feature {feature!r}; known: {', '.join(sorted(PROBES))}"
        ) from None
    if feature == "tun" and (why := privilege.tun_problem()) is not None:
        return why
    with Namespace(f"probe-{feature}") as ns:
        try:
            check(ns)
        except CmdError as exc:
            refusal = exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else str(exc)
            return _unloaded_module(feature) or refusal
    return None


def _unloaded_module(feature: str) -> str | None:
    """In a user namespace the kernel does not load a link type's module for us: if the
    module is installed, the reason is the missing privilege, not the kernel."""
    if privilege.is_initial_root():
        return None
    alias = f"alias rtnl-link-{feature} "
    try:
        with open(f"/lib/modules/{platform.release()}/modules.alias", encoding="utf-8") as f:
            if any(line.startswith(alias) for line in f):
                return privilege.initial_root_reason(f"loads the {feature} kernel module")
    except OSError:
        pass
    return None


def has(feature: str) -> bool:
    return probe(feature) is None


def missing_reason(*features: str) -> str | None:
    """'kernel lacks ipip (Error: Unknown device type.)' for the first missing one, or None."""
    for feature in features:
        why = probe(feature)
        if why is not None and why.startswith(privilege.ROOT_PREFIX):
            return why
        if why is not None:
            return f"kernel lacks {feature} ({why})"
    return None


def in_netregress_vm() -> bool:
    """True inside a guest booted by the kernel matrix (it exports NETREGRESS_IN_VM=1).

    Only there may a case change global, root-namespace-only knobs such as
    net.core.netdev_budget: the guest is thrown away after the run.
    """
    return bool(os.environ.get("NETREGRESS_IN_VM"))


def kernel_version() -> tuple[int, int]:
    """(major, minor) of the running kernel, for cases whose expectation changed in a
    known release (e.g. 5.14's subnet-zero-as-unicast)."""
    major, minor = platform.release().split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)
