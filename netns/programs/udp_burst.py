# SPDX-License-Identifier: GPL-2.0-only
"""Send UDP datagrams as fast as a loop can: ``udp_burst.py DST PORT COUNT SIZE``.

Prints how many the socket accepted; a refused send (a full queue, an unreachable route) is
counted out and the burst goes on, because the receiver's counters are what a case judges.
"""

import socket
import sys


def main(dst: str, port: int, count: int, size: int) -> None:
    payload = b"x" * size
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _ in range(count):
            try:
                sock.sendto(payload, (dst, port))
                sent += 1
            except OSError:
                pass
    print(sent)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
