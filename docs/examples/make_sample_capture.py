# SPDX-License-Identifier: GPL-2.0-only
"""Make docs/examples/request-response.pcap, the capture that
docs/reproducing-a-field-bug.md walks through with ``scripts/pcap2pkt``.

    .venv/bin/python docs/examples/make_sample_capture.py docs/examples/request-response.pcap

Why we make our own instead of shipping a stranger's: a field capture carries someone's
addresses and payloads, and its licence is not ours to give. This one is a short TCP exchange
between two network namespaces this script creates (the project's ``shapes.pair()``: hosts a,
10.0.0.1, and b, 10.0.0.2, on one veth), captured by tcpdump on b's side, the way an incident's
capture is taken on the host whose kernel is suspected. Client a sends a 64-byte request; server
b answers with 3000 bytes (three segments: TSO and GSO off on b, so the
capture shows what a NIC would put on the wire) and closes; a closes too. Nothing touches the root
namespace; the namespaces are deleted on the way out, also on failure. Needs root (or a user
namespace that may create network namespaces) and tcpdump.
"""

import socket
import sys
import threading
from pathlib import Path

from netns.capture import Capture
from netns.topology import build, shapes
from netregress.errors import NetregressError, run_cli
from netregress.netns_entry import in_netns

PORT = 8080
REQUEST = b"GET /report HTTP/1.0\r\n".ljust(62, b"x") + b"\r\n"
RESPONSE = b"HTTP/1.0 200 OK\r\n\r\n".ljust(3000, b"r")
TIMEOUT = 10.0


def _serve(listener: socket.socket) -> None:
    """b's side: read the request, answer, close (the FIN follows the last data segment)."""
    conn, _ = listener.accept()
    with conn:
        conn.settimeout(TIMEOUT)
        got = b""
        while len(got) < len(REQUEST):
            got += conn.recv(len(REQUEST) - len(got))
        conn.sendall(RESPONSE)


def _ask() -> bytes:
    """a's side: send the request, read the whole answer, close after b did."""
    with socket.create_connection(("10.0.0.2", PORT), timeout=TIMEOUT) as conn:
        conn.sendall(REQUEST)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def make(out: Path) -> None:
    with build(shapes.pair()) as net:
        # Segments as a NIC puts them on the wire, not one 3000-byte GSO packet.
        net["b"].link("eth0").offload(tso=False, gso=False)
        listener = in_netns(net["b"].name, lambda: socket.create_server(("10.0.0.2", PORT)))
        with listener, Capture(net["b"], "eth0", f"tcp port {PORT}", path=out):
            server = threading.Thread(target=_serve, args=(listener,), daemon=True)
            server.start()
            answer = in_netns(net["a"].name, _ask)
            server.join(TIMEOUT)
    if answer != RESPONSE:
        raise NetregressError(f"the exchange failed: {len(answer)} of {len(RESPONSE)} bytes")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2

    def body() -> int:
        make(Path(argv[0]).resolve())
        print(f"wrote {argv[0]}")
        return 0

    return run_cli("make_sample_capture", body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
