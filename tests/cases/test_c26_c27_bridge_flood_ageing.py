# SPDX-License-Identifier: GPL-2.0-only
"""C26, C27 · A bridge port that must not be flooded, and learned addresses that must age out.

C26 · ``bridge link set dev PORT flood off``. Container and VM hosts switch flooding off on
ports whose MAC addresses they program statically (Docker's and libvirt's isolated ports,
EVPN/VXLAN ports whose FDB the control plane fills) so unknown-unicast floods do not leak a
tenant's traffic to everyone. Mechanism: ``br_flood()`` skips ports without BR_FLOOD for
unknown unicast (broadcast is governed by the separate ``bcast_flood``). Oracle: a frame
to an unknown MAC from h1 reaches h2's port and not h3's, which has flood off; a broadcast
sent after it, which h3's port does get, shows that port's capture is complete. The broken
variant leaves flooding on for h3's port (it sees the frame), a strict xfail.

C27 · ``ageing_time``. After a VM or container moves to another port (live migration, a
pod rescheduled onto the same node), traffic keeps going to the old port until the learned
entry ages out; operators shorten ``ageing_time`` for fast failover. Mechanism:
``br_fdb_cleanup()`` deletes a dynamic entry once it has not been refreshed for
``ageing_time``. Oracle: with ageing_time 2 s, h2's learned entry is gone within 8 s of its
last frame (the hosts have IPv6 off, so nothing of theirs refreshes it). The broken variant
keeps the default 300 s, a strict xfail.
"""

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from netns import Namespace
from netns.topology import shapes
from netns.traffic import inject_frames, ping, poll_until
from netns.variants import broken

pytestmark = [pytest.mark.bridge]

UNKNOWN, BROADCAST = "02:00:00:00:26:01", "ff:ff:ff:ff:ff:ff"


def _frame(src: str, dst: str, payload: bytes) -> bytes:
    return bytes(
        Ether(src=src, dst=dst) / IP(src="10.0.1.1", dst="10.0.1.99") / UDP(dport=2626) / payload
    )


@pytest.mark.parametrize(
    "flood",
    ["off", broken("on", id="flood-on", why="a port with flooding on gets unknown unicast")],
)
def test_c26_flood_off_port_gets_no_unknown_unicast(topology, flood: str) -> None:
    net = topology(shapes.bridged(3, quiet=True))
    h1, sw = net["h1"], net["sw"]
    sw.run(["bridge", "link", "set", "dev", "p3", "flood", flood])
    src = h1.link("eth0").mac
    with sw.capture("p2", "udp port 2626") as to_h2, sw.capture("p3", "udp port 2626") as to_h3:
        inject_frames(h1, "eth0", [_frame(src, UNKNOWN, b"unknown"), _frame(src, BROADCAST, b"bc")])
        assert to_h3.wait_for(lambda p: p[Ether].dst == BROADCAST)
        assert to_h2.wait_for(lambda p: p[Ether].dst == BROADCAST)
    reached = {
        port: sum(1 for p in cap.packets if p[Ether].dst == UNKNOWN)
        for port, cap in (("h2", to_h2), ("h3", to_h3))
    }
    assert reached == {"h2": 1, "h3": 0}


def _learned(sw: Namespace, mac: str) -> bool:
    shown = sw.run(["bridge", "fdb", "show", "br", "br0"]).stdout
    return any(line.startswith(mac) and "permanent" not in line for line in shown.splitlines())


@pytest.mark.parametrize(
    "ageing_centisecs",
    [200, broken(30000, id="default-300s", why="learned entries then live for 300 s")],
)
def test_c27_learned_address_ages_out(topology, ageing_centisecs: int) -> None:
    net = topology(shapes.bridged(2, quiet=True))
    h1, h2, sw = net["h1"], net["h2"], net["sw"]
    sw.run(["ip", "link", "set", "br0", "type", "bridge", "ageing_time", str(ageing_centisecs)])
    assert ping(h1, "10.0.1.2", count=1)
    mac = h2.link("eth0").mac
    assert _learned(sw, mac), "the bridge did not learn h2's address"
    assert poll_until(lambda: not _learned(sw, mac), timeout=8, interval=0.2)
