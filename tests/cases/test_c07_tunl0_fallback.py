# SPDX-License-Identifier: GPL-2.0-only
"""C07 · The fallback device ``tunl0``: in every new namespace, undeletable, renamable, and
the catch-all for IPIP only while it is up.

Field story (report 003, lines 6705–6716): "the tunl0 calico creates is a tunnel, visible
with ``ip tunnel show``; it cannot be cleaned up, only a reboot removes it". The workaround
quoted is ``ip link set dev tunl0 name tunl0_fallback``.

Mechanism: loading ``ipip`` makes the kernel create the fallback device ``tunl0`` (remote
any, local any) in every network namespace — unless ``net.core.fb_tunnels_only_for_init_net``
(root namespace only; 0: every namespace, 1: only the initial one) says otherwise. The
fallback is owned by the module's per-namespace state, so ``ip link del`` refuses or
ignores it, but a rename is an ordinary link change. Received IPIP that matches no
configured tunnel is handed to the fallback only while it is IFF_UP; otherwise the tunnel4
layer answers with ICMP destination unreachable.

Oracles (asserted): ``tunl0`` exists in a new namespace iff the sysctl is 0 (read on the
host; both values are set in a matrix VM guest, which is thrown away); after a delete
attempt the device still exists (the error, if any, is recorded — it differs between
kernels); the rename succeeds and keeps the ifindex; an IPIP packet from a source no tunnel
knows raises tunl0's rx_packets when it is up.

Broken variants (strict xfail, the same oracle): the sysctl oracle on a namespace created while
the sysctl was 1 and checked after it went back to 0 (it has no tunl0 although the sysctl now
says every namespace gets one); the delete oracle on a tunl0 that is an ordinary IPIP tunnel
(the fallback renamed away first), which ``ip link del`` removes like any link; the catch-all
oracle with tunl0 down (the packets are refused with ICMP destination unreachable).
"""

from collections.abc import Iterator

import pytest
from pyroute2.netlink.exceptions import NetlinkError
from scapy.layers.inet import ICMP, IP

from netns import Namespace
from netns.counters import moved, snapshot
from netns.features import in_netregress_vm
from netns.softnet import GUEST_ONLY, GlobalSysctls
from netns.topology import Network
from netns.traffic import STDLIB_PYTHON, poll_until
from netns.variants import broken

# The probe also loads the module in a VM guest.
pytestmark = [pytest.mark.needs("ipip"), pytest.mark.tunnel]

FB = "net.core.fb_tunnels_only_for_init_net"


def current_fb_value() -> int:
    try:
        with open("/proc/sys/" + FB.replace(".", "/"), encoding="ascii") as f:
            return int(f.read())
    except FileNotFoundError:  # before 4.17: always in every namespace
        return 0


def _knobs(value: int | str) -> dict[str, int | str]:
    """The sysctl setting for a parameter value ("current": leave it as it is)."""
    if value == "current":
        return {}
    if not in_netregress_vm():
        pytest.skip(GUEST_ONLY.format(knob=FB))
    return {FB: value}


@pytest.mark.parametrize(
    "created, checked",
    [
        pytest.param("current", "current", id="current"),
        pytest.param(0, 0, id="0"),
        pytest.param(1, 1, id="1"),
        broken(
            1,
            0,
            id="created-under-1",
            why="a namespace made while the sysctl was 1 has no "
            "tunl0, although the sysctl reads 0 when it is checked",
        ),
    ],
)
def test_c07_tunl0_in_new_namespaces_follows_fb_sysctl(
    created: int | str, checked: int | str
) -> None:
    """The kernel reads the sysctl once, when it sets up a new namespace's ipip state."""
    with GlobalSysctls(_knobs(created)):
        ns = Namespace("c07")
    with ns, GlobalSysctls(_knobs(checked)):
        effective = current_fb_value()
        present = "tunl0" in ns.links()
    print(f"C07 {FB}={effective}: tunl0 in a new namespace: {present}")
    assert present == (effective == 0)


@pytest.fixture
def with_fallback() -> Iterator[Namespace]:
    """A new namespace that has the kernel's tunl0 (setting the sysctl only in a guest)."""
    if current_fb_value() == 0:
        knobs = {}
    elif in_netregress_vm():
        knobs = {FB: 0}
    else:
        pytest.skip(
            f"{FB}={current_fb_value()} on this host: new namespaces get no tunl0, "
            f"and {GUEST_ONLY.format(knob=FB)}"
        )
    with GlobalSysctls(knobs):
        ns = Namespace("c07")
    with ns:
        assert "tunl0" in ns.links()
        yield ns


def _try_delete(ns: Namespace, ifname: str) -> str:
    """Attempt ``ip link del``; the kernel's answer (error or silence) differs by version."""
    try:
        ns.link(ifname).delete()
        return "no error"
    except NetlinkError as exc:
        return f"errno {exc.code} ({exc.args[1]})"


def _user_tunl0(ns: Namespace) -> None:
    """Move the fallback out of the way and give its name to an ordinary IPIP tunnel (its
    endpoints differ from the fallback's any/any, which the kernel would refuse as a twin)."""
    ns.link("tunl0").down().rename("tunl0_kernel")
    ns.run(
        ["ip", "link", "add", "tunl0", "type", "ipip", "local", "192.0.2.8", "remote", "192.0.2.7"]
    )


@pytest.mark.parametrize(
    "make_user_tunl0",
    [
        pytest.param(False, id="fallback"),
        broken(
            True,
            id="user-tunnel",
            why="a tunl0 that is an ordinary IPIP tunnel is deleted like any link",
        ),
    ],
)
def test_c07_tunl0_cannot_be_deleted_but_can_be_renamed(
    with_fallback: Namespace, record_testsuite_property, make_user_tunl0: bool
) -> None:
    ns = with_fallback
    if make_user_tunl0:
        _user_tunl0(ns)
    index = ns.link("tunl0").index
    outcome = _try_delete(ns, "tunl0")
    record_testsuite_property("c07_delete_tunl0", outcome)
    print(f"C07 delete tunl0: {outcome}")
    assert "tunl0" in ns.links(), "the fallback tunl0 was deleted"
    ns.link("tunl0").down().rename("tunl0_fallback")
    assert "tunl0" not in ns.links()
    assert ns.link("tunl0_fallback").index == index
    _try_delete(ns, "tunl0_fallback")  # still the fallback under its new name
    assert "tunl0_fallback" in ns.links()


_SEND_IPIP = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_IPIP)
for _ in range(int(sys.argv[3])):
    s.sendto(bytes.fromhex(sys.argv[2]), (sys.argv[1], 0))
"""


@pytest.mark.parametrize(
    "up",
    [
        pytest.param(True, id="up"),
        broken(False, id="down", why="a down tunl0 catches nothing: ICMP unreachable instead"),
    ],
)
def test_c07_tunl0_catches_unmatched_ipip_only_while_up(veth_pair: Network, up: bool) -> None:
    a, b = veth_pair["a"], veth_pair["b"]
    if "tunl0" not in b.links():
        pytest.skip(f"{FB}={current_fb_value()}: no fallback tunl0 in new namespaces")
    if up:
        b.link("tunl0").up()
    inner = bytes(IP(src="10.7.0.9", dst="10.0.0.2") / ICMP(id=7, seq=1) / b"c07")
    count = 3
    rx_before = b.link("tunl0").stats()["rx_packets"]

    def received() -> int:
        return b.link("tunl0").stats()["rx_packets"] - rx_before

    def refused() -> bool:
        """b answered one with ICMP unreachable: tunl0 can no longer reach *count*."""
        return moved(b, "IcmpOutDestUnreachs", icmp_before) > 0

    icmp_before = snapshot(b)
    # The kernel adds the outer header (protocol 4): 10.0.0.1 → 10.0.0.2.
    a.run([*STDLIB_PYTHON, "-c", _SEND_IPIP, "10.0.0.2", inner.hex(), str(count)])
    poll_until(lambda: received() >= count or refused(), timeout=5)
    assert received() == count, received()
