# SPDX-License-Identifier: GPL-2.0-only
"""A tiny HTTP/1.1 keep-alive server answering the way nginx does (field case C02).

    python http_sendfile_server.py ADDR PORT MODE BODY_FILE

MODE decides how each response is written, mirroring nginx's settings:
  cork       tcp_nopush on:  TCP_CORK=1; send(header); sendfile(body); TCP_CORK=0
  nodelay-flushed  tcp_nopush off: TCP_NODELAY=1 once; send(header); wait until the header
             has left the socket (SIOCOUTQNSD = 0); sendfile(body). nginx does not wait: on
             an idle host the header has left by then anyway, but under load TCP small
             queues or autocorking can hold it and the body joins it. The wait makes the
             split the field saw independent of that timing.
  onebuffer  sendfile off:   send(header + body) from one user buffer
  onebuffer-cork             the same, bracketed by TCP_CORK

It prints "ready" once listening, serves one connection until the client closes it, and
exits: bounded by construction.
"""

import fcntl
import os
import socket
import struct
import sys
import time

SIOCOUTQNSD = 0x894B  # bytes queued on the socket and not yet sent (linux/sockios.h)
FLUSH_TIMEOUT = 20.0


def wait_until_sent(conn: socket.socket) -> None:
    """Return once nothing written to *conn* is still waiting below TCP to be sent."""
    deadline = time.monotonic() + FLUSH_TIMEOUT
    while struct.unpack("i", fcntl.ioctl(conn.fileno(), SIOCOUTQNSD, b"\0" * 4))[0]:
        if time.monotonic() > deadline:
            raise SystemExit("the header never left the socket")
        time.sleep(0.001)


def main() -> None:
    addr, port, mode, body_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    with open(body_path, "rb") as f:
        body = f.read()
    header = (
        f"HTTP/1.1 200 OK\r\nServer: netregress\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    ).encode()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addr, port))
    listener.listen(1)
    print("ready", flush=True)
    conn, _ = listener.accept()
    conn.settimeout(20)
    if mode == "nodelay-flushed":
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    cork = mode in ("cork", "onebuffer-cork")
    with open(body_path, "rb") as body_file:
        pending = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                break
            pending += chunk
            while b"\r\n\r\n" in pending:
                _, pending = pending.split(b"\r\n\r\n", 1)
                if cork:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                if mode.startswith("onebuffer"):
                    conn.sendall(header + body)
                else:
                    conn.sendall(header)
                    if mode == "nodelay-flushed":
                        wait_until_sent(conn)
                    os.sendfile(conn.fileno(), body_file.fileno(), 0, len(body))
                if cork:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
    conn.close()


if __name__ == "__main__":
    main()
