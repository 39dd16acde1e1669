# SPDX-License-Identifier: GPL-2.0-only
"""A TCP echo server: ``echo_server.py HOST PORT``.

It prints ``ready`` once it listens, so whoever started it can wait for that line instead of
racing the bind; then each connection gets its first read echoed back and is closed.
"""

import socket
import sys


def main(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, port))
        server.listen(16)
        print("ready", flush=True)
        while True:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(10)
                try:
                    conn.sendall(conn.recv(65536))
                except OSError:
                    pass


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
