# SPDX-License-Identifier: GPL-2.0-only
"""Protocols a kernel may be built without, and the sub-tests that need them.

Why: a kselftest harness program (``ip_local_port_range``) runs each check per protocol and
reports a check whose ``socket()`` the kernel refuses as a plain failure, with no errno in its
output. A kernel without SCTP is a configuration, not a failure of the kernel under test, so
a failed sub-test named for a protocol this kernel cannot open a socket of is not judged.
The probe opens one socket in a fresh network namespace of its own (a thread unshares one):
nothing in the root namespace is touched.
"""

import errno
import re
import socket

from netregress.netns_entry import in_new_netns

# protocol → (sub-test names that need it, the socket that proves it).
PROTOCOLS = {
    "SCTP": (
        re.compile(r"sctp|stcp", re.I),
        (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP),
    ),
}
_ABSENT = {errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT, errno.EAFNOSUPPORT}


def _refusal(args: tuple[int, int, int]) -> str:
    try:
        socket.socket(*args).close()
    except OSError as exc:
        if exc.errno in _ABSENT:
            return exc.strerror or str(exc)
    return ""


def missing_protocols() -> dict[str, str]:
    """The protocols of :data:`PROTOCOLS` this kernel refuses a socket of, with its answer."""

    def probe() -> dict[str, str]:
        found = {name: _refusal(args) for name, (_, args) in PROTOCOLS.items()}
        return {name: why for name, why in found.items() if why}

    return in_new_netns(probe)


def needs(name: str, missing: dict[str, str]) -> str:
    """The trouble line of a sub-test named `name` if it needs a missing protocol, else ""."""
    for protocol, why in missing.items():
        if PROTOCOLS[protocol][0].search(name):
            return f"protocol\t{protocol}\t{why}"
    return ""
