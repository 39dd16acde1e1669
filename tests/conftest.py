# SPDX-License-Identifier: GPL-2.0-only
"""The subsystem markers of this tree's packetdrill scripts (README, "Adding a case").

A Python case names its subsystems in its module (``pytestmark``, or a mark on a function).
A ``.pkt`` script cannot without being changed: a header line would move the line numbers its
``expect-fail`` patterns name, and change the checksum the conformance reference
(``tests/packetdrill/conformance-reference.json``) recorded for it. So its folder decides,
here, and a script in a folder that mixes subsystems has an entry of its own. The packetdrill
plugin itself marks every ``.pkt`` item ``packetdrill``. tests/unit/test_markers.py checks
that every collected item carries a subsystem marker: a script in a folder not named here
fails that check.
"""

from pathlib import Path

import pytest

TESTS = Path(__file__).parent

# A folder or one script, relative to tests/ → its subsystem markers; the longest entry wins.
PKT_SUBSYSTEMS: dict[str, tuple[str, ...]] = {
    "cases/packetdrill": ("tcp",),
    "packetdrill/tcp": ("tcp",),
    "packetdrill/udp": ("udp",),
    "packetdrill/icmp": ("icmp",),
    # Path MTU discovery: the ICMP message lowers the MSS TCP retransmits with.
    "packetdrill/icmp/frag-needed-v4.pkt": ("icmp", "tcp"),
    "packetdrill/icmp/packet-too-big-v6.pkt": ("icmp", "tcp"),
    "packetdrill/icmp/port-unreachable.pkt": ("icmp", "udp"),
    "packetdrill/encap": ("tunnel",),
    "packetdrill/misc": ("tcp",),  # commands, code blocks and system calls on TCP sockets
    "packetdrill/negative": ("tcp",),
    "packetdrill/negative/errno-without-note.pkt": ("udp",),
    "packetdrill/negative/wrong-errno.pkt": ("udp",),
    "packetdrill/negative/wrong-result.pkt": ("udp",),
}


def pkt_subsystems(path: Path) -> tuple[str, ...]:
    """The markers of the script at ``path`` (none for a script outside the table)."""
    if not path.is_relative_to(TESTS):
        return ()
    relative = path.relative_to(TESTS).as_posix()
    entries = [key for key in PKT_SUBSYSTEMS if relative == key or relative.startswith(key + "/")]
    return PKT_SUBSYSTEMS[max(entries, key=len)] if entries else ()


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".pkt":
            for name in pkt_subsystems(item.path):
                item.add_marker(name)
