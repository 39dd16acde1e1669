# SPDX-License-Identifier: GPL-2.0-only
"""C13 · veth TX checksum offload behind a user-space forwarder: bad checksums, dead TCP.

Field story (report 002, lines 197–211): a namespace's veth was a port of an OVS-DPDK
``netdev`` bridge; ssh into the VMs only worked after ``ip netns exec … ethtool -K veth-ns
tx off``. Report 003's captures show the same artefact as ``cksum … (incorrect -> …)``.

Mechanism: with TX checksum offload on, the kernel leaves TCP/UDP checksums to "the
hardware": a veth hands the skb over as CHECKSUM_PARTIAL and the checksum field holds only
the pseudo-header seed. Inside the kernel that is fine, but a user-space datapath reading
frames through AF_PACKET and re-injecting them (like OVS-DPDK's netdev datapath without
honouring the offload metadata) forwards a wrong checksum, and the receiver drops it.

Emulation: ``a`` ─veth─ ``fwd`` ─veth─ ``b``, where ``fwd`` runs a tiny AF_PACKET bridge in
Python (no bridge device, no kernel forwarding).

Oracle (asserted): with ``tx off`` on both senders' veths the exchange completes and the
receiver's TcpInCsumErrors does not move. The broken variant runs it with offload on (the
receiver counts checksum errors and the exchange never completes), a strict xfail. Never
assert checksum validity on a TX-side capture: tcpdump sees the unfinished checksum there.
"""

import queue
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

from netns import Namespace
from netns.counters import Delta, moved
from netns.traffic import STDLIB_PYTHON, Exchange, TcpEchoServer, echo_deadline, tcp_echo
from netns.variants import broken
from netregress.errors import NetregressError

pytestmark = [pytest.mark.tcp]

FORWARDER = textwrap.dedent("""
    import select, socket, sys
    ETH_P_ALL, PACKET_OUTGOING = 3, 4
    socks = []
    for name in sys.argv[1:3]:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((name, 0))
        socks.append(s)
    peer = {socks[0]: socks[1], socks[1]: socks[0]}
    print("ready", flush=True)
    while True:
        for s in select.select(socks, [], [])[0]:
            frame, addr = s.recvfrom(65535)
            if addr[2] != PACKET_OUTGOING:  # not our own transmissions
                peer[s].send(frame)
""")


@pytest.fixture
def forwarded(ns_factory) -> Iterator[tuple[Namespace, Namespace]]:
    """Hosts a (10.0.0.1) and b (10.0.0.2), joined only by the user-space forwarder."""
    a, fwd, b = ns_factory("a"), ns_factory("fwd"), ns_factory("b")
    a.add_veth("eth0", fwd, "to_a")
    b.add_veth("eth0", fwd, "to_b")
    a.add_address("eth0", "10.0.0.1/24")
    b.add_address("eth0", "10.0.0.2/24")
    for host, ifname in ((a, "eth0"), (b, "eth0"), (fwd, "to_a"), (fwd, "to_b")):
        host.link(ifname).up()
    proc = fwd.spawn([*STDLIB_PYTHON, "-c", FORWARDER, "to_a", "to_b"], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"ready":
        raise NetregressError("the AF_PACKET forwarder did not start")
    yield a, b
    proc.stop()


def echo_unless_csum_errors(a: Namespace, b: Namespace, watch: Delta) -> Exchange:
    """The TCP echo a → b, abandoned as soon as b counts a checksum error.

    Why not wait for the client: a counted TcpInCsumErrors already fails the oracle (counters
    only grow), while the client would keep retransmitting its SYN until the echo deadline,
    30 s in a TCG guest. A passing run needs the same as with a plain echo: the client's
    answer within the deadline, and no checksum error in the whole block. The counters are
    read every half second only: each read is an ``nstat`` process, which a TCG guest's
    client and server would otherwise wait behind. An abandoned client thread ends by its
    own timeout; its socket dies with namespace a.
    """
    deadline = echo_deadline()
    answers: queue.Queue[Exchange] = queue.Queue()

    def client() -> None:
        answers.put(tcp_echo(a, "10.0.0.2", 8080, timeout=deadline))

    threading.Thread(target=client, name="c13-echo-client", daemon=True).start()
    give_up = time.monotonic() + 3 * deadline + 10  # connect, send, receive: each may wait
    while True:
        try:
            return answers.get(timeout=0.5)
        except queue.Empty:
            pass
        if moved(b, "TcpInCsumErrors", watch.before) > 0:
            return Exchange("checksum errors at the receiver")
        if time.monotonic() > give_up:
            return Exchange("no answer in time")


@pytest.mark.parametrize(
    "tx_offload",
    [
        pytest.param(False, id="tx-offload-off"),
        broken(True, id="tx-offload-on", why="the forwarder passes on unfinished checksums"),
    ],
)
def test_c13_veth_tx_csum_offload_through_userspace_forwarder(forwarded, tx_offload: bool) -> None:
    a, b = forwarded
    if not tx_offload:
        for host in (a, b):
            host.link("eth0").offload(tx=False)
    with TcpEchoServer(b, "10.0.0.2", 8080), b.nstat() as delta:
        exchange = echo_unless_csum_errors(a, b, delta)
    assert exchange.ok, f"TCP echo through the forwarder failed: {delta.nonzero()}"
    assert delta["TcpInCsumErrors"] == 0
