# SPDX-License-Identifier: GPL-2.0-only
"""C30 · ``REJECT --reject-with tcp-reset`` refuses a connection at once.

Firewalls reject rather than drop so that clients fail fast: a refused ``connect()`` returns
ECONNREFUSED in one round trip, where a dropped SYN makes the client retry for minutes
(the difference between a health check that fails over in milliseconds and one that hangs).
Mechanism: the REJECT target builds the reset itself (``nf_reject_ip_tcphdr_put()``): for
a SYN it must acknowledge the SYN's sequence number plus one, or the client's SYN_SENT
state discards it as unacceptable (RFC 793) and keeps retransmitting.
Oracle: a client's connect to a port the server's INPUT chain rejects with tcp-reset fails
with ECONNREFUSED within 2 s. The broken variant drops the SYN instead (the connect times
out), a strict xfail.
"""

import pytest

from netns.topology import shapes
from netns.traffic import STDLIB_PYTHON
from netns.variants import broken

pytestmark = [pytest.mark.netfilter, pytest.mark.tcp]

PORT = 8030
_CONNECT = """
import errno, socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2).close()
    print("connected")
except socket.timeout:
    print("timeout")
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""


@pytest.mark.needs("iptables")
@pytest.mark.parametrize(
    "target",
    [
        pytest.param(("REJECT", "--reject-with", "tcp-reset"), id="reject-tcp-reset"),
        broken(("DROP",), id="drop", why="a dropped SYN leaves the client waiting"),
    ],
)
def test_c30_rejected_connect_is_refused_at_once(topology, target: tuple[str, ...]) -> None:
    net = topology(shapes.pair())
    net["b"].run(["iptables", "-w", "-A", "INPUT", "-p", "tcp", "--dport", str(PORT), "-j",
                  *target])  # fmt: skip
    said = net["a"].run([*STDLIB_PYTHON, "-c", _CONNECT, "10.0.0.2", str(PORT)], timeout=20)
    assert said.stdout.strip() == "ECONNREFUSED"
