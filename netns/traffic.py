# SPDX-License-Identifier: GPL-2.0-only
"""Small, bounded traffic generators the cases share: ping, TCP echo, UDP bursts, raw frames.

Every generator is bounded in count and time, so a broken path shows up as a failed
exchange within seconds instead of a hung test. They use real programs and real sockets
inside the namespaces: the kernel under test does all the networking. The TCP echo client
and the frame injector work from a thread of ours that entered the namespace
(:func:`netregress.netns_entry.in_netns`), where the socket they make belongs: the same system
calls a helper script would make, without starting a Python, which in a TCG guest costs more
than the exchange itself.
"""

import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from netregress.errors import NetregressError
from netregress.netns_entry import in_netns
from netregress.process import Process

from .handle import Handle

_READY_TIMEOUT = 10.0
# The helper programs (netns/programs) and the cases' own need only the standard library: they
# start without `site` (-S), whose virtualenv hooks (the editable install's finder,
# setuptools' shim) would slow every start, most of all in a TCG guest.
STDLIB_PYTHON = (sys.executable, "-S")
_PROGRAMS = Path(__file__).parent / "programs"


def ping(
    ns: Handle,
    dst: str,
    count: int = 1,
    wait: float = 2,
    hopeless: Callable[[], bool] | None = None,
) -> bool:
    """``ping -c COUNT -W WAIT DST`` inside *ns*: True if every request got its reply.

    A failing ping waits out *wait*. *hopeless*, polled while it runs, may end that wait: it
    answers True only once a counter proves that no missing reply can come any more (each
    request, or its reply, dropped where the case says it is), so it can only settle a
    failure, never a pass."""
    argv = ["ping", "-n", "-q", "-c", str(count), "-i", "0.05", "-W", str(wait), dst]
    timeout = count * 0.05 + wait + 10
    if hopeless is None:
        return ns.run(argv, check=False, timeout=timeout).ok
    proc = ns.spawn(argv, stderr=subprocess.DEVNULL)
    try:
        if not poll_until(lambda: proc.poll() is not None or hopeless(), timeout):
            raise NetregressError(f"ping {dst} in {ns.name} ran longer than {timeout:.0f} s")
        return proc.poll() == 0
    finally:
        proc.stop()


class TcpEchoServer:
    """``with TcpEchoServer(ns, addr, port):`` — a TCP echo server that is listening on entry.

    Entry returns only after the server printed that it listens, so a client started inside
    the block never races the bind.
    """

    def __init__(self, ns: Handle, addr: str, port: int) -> None:
        self.ns, self.addr, self.port = ns, addr, port
        self._proc: Process | None = None

    def __enter__(self) -> "TcpEchoServer":
        self._proc = self.ns.spawn(
            [*STDLIB_PYTHON, str(_PROGRAMS / "echo_server.py"), self.addr, str(self.port)],
            stdout=subprocess.PIPE,
        )
        stdout = self._proc.stdout
        assert stdout is not None
        if (
            not select.select([stdout], [], [], _READY_TIMEOUT)[0]
            or stdout.readline().strip() != b"ready"
        ):
            self._proc.stop()
            raise NetregressError(
                f"TCP echo server on {self.addr}:{self.port} in {self.ns.name} did not start"
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.stop()


@dataclass(frozen=True)
class Exchange:
    """What a client saw: ``ok`` or the name of the exception (``TimeoutError`` …)."""

    outcome: str

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


def echo_deadline() -> float:
    """How long an exchange that completes at once on an idle host may take before it counts
    as "never completes": 5 s, or 30 s in an emulated (TCG) guest, where a vCPU starved by a
    loaded host stalls the client or the server for seconds. Slowness can only delay the
    echo, never fake it, and no case asserts how long it took."""
    return 30.0 if os.environ.get("NETREGRESS_EMULATED") else 5.0


def tcp_echo(
    ns: Handle,
    addr: str,
    port: int,
    *,
    timeout: float | None = None,
    payload: str = "netregress",
) -> Exchange:
    """Connect from *ns*, send *payload*, expect it echoed; each step (connect, send,
    receive) gives up after *timeout* (default: :func:`echo_deadline`)."""
    limit = echo_deadline() if timeout is None else timeout

    def client() -> str:
        try:
            with socket.create_connection((addr, port), timeout=limit) as conn:
                conn.sendall(payload.encode())
                got = conn.recv(65536).decode(errors="replace")
        except OSError as exc:
            return type(exc).__name__
        return "ok" if got == payload else f"mismatch {got!r}"

    return Exchange(in_netns(ns.name, client))


def udp_burst(
    ns: Handle,
    dst: str,
    *,
    count: int,
    port: int = 9,
    size: int = 18,
    cpu: int | None = None,
    timeout: float = 60,
) -> int:
    """Send *count* small UDP datagrams from *ns* (pinned to *cpu* if given); returns how
    many the socket accepted. Nothing needs to listen: the receiver's stack still
    processes (and counts) every datagram."""
    program = str(_PROGRAMS / "udp_burst.py")
    argv = [*STDLIB_PYTHON, program, dst, str(port), str(count), str(size)]
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu), *argv]
    return int(ns.run(argv, timeout=timeout).stdout.strip())


def poll_until(check: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Call *check* until it returns True or *timeout* passes: awaiting an event, not
    sleeping a guessed time. Returns the last answer."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def inject_frames(ns: Handle, ifname: str, frames: list[bytes]) -> None:
    """Send hand-built Ethernet frames out of *ifname* in *ns* through an AF_PACKET socket
    (build them with scapy in the test)."""

    def inject() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
            sock.bind((ifname, 0))
            for frame in frames:
                sock.send(frame)

    in_netns(ns.name, inject)
