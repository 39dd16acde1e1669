# SPDX-License-Identifier: GPL-2.0-only
"""C02 / C03 — how many segments an nginx-style response takes, and route `quickack`.

Field story (field-cases C02, C03; report 003 lines 467–611): nginx with `sendfile on`
writes the HTTP header from user memory and the body with sendfile(). With `tcp_nopush off`
it only sets TCP_NODELAY and every small response leaves as **two** segments (header,
body); with `tcp_nopush on` it brackets the response with TCP_CORK and the kernel sends
**one**. The report measured ~20 % more requests/s and pktout/request falling from ≈1.96 to
≈0.97. Adding `quickack 1` to the route made the server ACK every request at once: pktout
doubled (905.2K vs 452.6K) with the same QPS.

Mechanism: TCP_CORK queues partial frames until uncorked (stronger than TCP_NODELAY);
without it, NODELAY pushes the header before sendfile() appends the body. The RTAX_QUICKACK
route metric keeps the connection in quick-ACK mode, so the ACK of each request leaves
from softirq before the application has written the response it would have ridden on.

Oracle: a real server and client in two namespaces over a veth; tcpdump on the server's
side; server→client data segments counted per response from the 3rd request on (the first
ones are ACKed at once by design: delayed ACK starts in quick-ACK mode). Asserted: every
response is exactly **one** segment with cork, with header+body in one buffer, and with
both — for net.ipv4.tcp_autocorking 0 and 1. Load cannot change that: a corked response
is held until uncorked, and a single small write is a single skb.

What the oracle cannot see: whether an uncorked header leaves before sendfile() appends the
body. nginx does not wait, and under load TCP small queues (or autocorking) can hold the
still-unsent header so the body joins it: the nodelay pair is 2 segments on an idle host and
sometimes 1 on a busy one, so plain nodelay is not asserted. The broken variant
(``nodelay-flushed``) is nginx's tcp_nopush off with the server waiting until the header
has left the socket (SIOCOUTQNSD = 0) before sendfile(): the split is then certain, and the
one-segment oracle must fail (strict xfail).

C03: with ``quickack 1`` on the route, each request is answered first by a pure ACK, then
the response. The oracle asserts no pure ACK from the 3rd request on (the ACK rides on the
response); the broken variant adds the route metric.
"""

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from scapy.packet import Packet

from netns.capture import TCP, flow_of, tcp_payload_len
from netns.topology import Network, shapes
from netns.traffic import STDLIB_PYTHON
from netns.variants import broken

pytestmark = [pytest.mark.tcp]

APPS = Path(__file__).parent / "apps"
SERVER, CLIENT = "10.0.0.2", "10.0.0.1"
PORT = 8080
REQUESTS = 8
STEADY_FROM = 2  # index of the 3rd request
BODY = b"netregress C02 body: small static page, 58 bytes long!!\n"


@dataclass
class Response:
    """What the server sent after one request: in wire order, 'ack' or a payload length."""

    events: list[int | str] = field(default_factory=list)

    @property
    def data_segments(self) -> int:
        return sum(1 for e in self.events if e != "ack")


def per_request(packets: list[Packet]) -> list[Response]:
    """Split the server's packets into buckets, one per client request."""
    responses: list[Response] = []
    for pkt in packets:
        flow = flow_of(pkt)
        if TCP not in pkt or flow is None:
            continue
        length = tcp_payload_len(pkt)
        if flow[0] == CLIENT and length > 0:
            responses.append(Response())
        elif flow[0] == SERVER and responses:
            flags = int(pkt[TCP].flags)
            if length > 0:
                responses[-1].events.append(length)
            elif flags & 0x10 and not flags & 0x07:
                responses[-1].events.append("ack")
    return responses


def exchange(net: Network, tmp_path: Path, mode: str, autocorking: int) -> list[Response]:
    """Serve REQUESTS keep-alive requests in *mode*; returns the server's responses."""
    body = tmp_path / "body.txt"
    body.write_bytes(BODY)
    for host in ("a", "b"):
        net[host].set_sysctls({"net.ipv4.tcp_autocorking": autocorking})
    server = net["b"].spawn(
        [*STDLIB_PYTHON, str(APPS / "http_sendfile_server.py"), SERVER, str(PORT), mode, str(body)],
        stdout=-1,
    )
    assert server.stdout is not None
    assert server.stdout.readline().strip() == b"ready"
    with net["b"].capture("eth0", f"tcp port {PORT}") as cap:
        net["a"].run(
            [
                *STDLIB_PYTHON,
                str(APPS / "http_keepalive_client.py"),
                SERVER,
                str(PORT),
                str(REQUESTS),
            ],
            timeout=30,
        )
        server.wait(10)
    responses = per_request(cap.packets)
    assert len(responses) == REQUESTS, f"saw {len(responses)} requests on the wire"
    return responses


@pytest.mark.parametrize("autocorking", [0, 1], ids=["autocork0", "autocork1"])
@pytest.mark.parametrize(
    "mode",
    [
        "cork",  # tcp_nopush on
        "onebuffer",  # sendfile off
        "onebuffer-cork",
        broken(
            "nodelay-flushed",
            id="nodelay-flushed",
            why="tcp_nopush off, header sent before the body: two segments per response",
        ),
    ],
)
def test_c02_one_segment_per_response(
    topology, tmp_path: Path, record_testsuite_property, mode: str, autocorking: int
) -> None:
    net = topology(shapes.pair())
    responses = exchange(net, tmp_path, mode, autocorking)
    counts = [r.data_segments for r in responses]
    record_testsuite_property(f"c02_{mode}_autocork{autocorking}_segments", counts)
    assert set(counts[STEADY_FROM:]) == {1}, (
        f"{mode}, tcp_autocorking={autocorking}: data segments per response {counts}, "
        f"expected 1 from the 3rd request on"
    )


@pytest.mark.parametrize(
    "quickack",
    [
        pytest.param(False, id="no-quickack"),
        broken(
            True, id="quickack1", why="quickack 1 on the route: a pure ACK precedes each response"
        ),
    ],
)
def test_c03_ack_rides_on_the_response(
    topology, tmp_path: Path, record_testsuite_property, quickack: bool
) -> None:
    net = topology(shapes.pair())
    if quickack:  # ip route change 10.0.0.0/24 dev eth0 quickack 1 (the report's recipe)
        net["b"].ipr.route(
            "change",
            dst="10.0.0.0/24",
            oif=net["b"].link("eth0").index,
            metrics={"RTAX_QUICKACK": 1},
            scope=253,
            proto=2,
        )
        assert "quickack 1" in net["b"].run(["ip", "route", "show", "10.0.0.0/24"]).stdout
    responses = exchange(net, tmp_path, "cork", autocorking=1)
    record_testsuite_property(
        f"c03_quickack{int(quickack)}_server_events", [r.events for r in responses]
    )
    # Interactive mode: the ACK rides on the (corked) response, no pure ACK at all.
    steady = responses[STEADY_FROM:]
    assert all("ack" not in r.events and r.data_segments == 1 for r in steady), [
        r.events for r in responses
    ]
