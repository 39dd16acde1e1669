# SPDX-License-Identifier: GPL-2.0-only
"""HTTP/1.1 keep-alive client for field cases C02/C03: N requests, one at a time.

    python http_keepalive_client.py ADDR PORT REQUESTS

Each request waits for its complete response (Content-Length) before the next is sent,
which is what puts the server's TCP into interactive (ping-pong) mode. Exits non-zero if a
response is short or late.
"""

import socket
import sys


def read_response(conn: socket.socket, buffered: bytes) -> bytes:
    while b"\r\n\r\n" not in buffered:
        chunk = conn.recv(4096)
        if not chunk:
            raise SystemExit("connection closed before a full header")
        buffered += chunk
    head, rest = buffered.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        chunk = conn.recv(4096)
        if not chunk:
            raise SystemExit("connection closed inside a body")
        rest += chunk
    return rest[length:]


def main() -> None:
    addr, port, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    conn = socket.create_connection((addr, port), timeout=10)
    leftover = b""
    for i in range(requests):
        conn.sendall(f"GET /page?{i} HTTP/1.1\r\nHost: netregress\r\n\r\n".encode())
        leftover = read_response(conn, leftover)
    conn.close()


if __name__ == "__main__":
    main()
