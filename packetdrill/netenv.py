# SPDX-License-Identifier: GPL-2.0-only
"""The isolated network the script runs in: a fresh anonymous namespace and ``tun0``.

Why ``unshare(CLONE_NEWNET)`` on the engine itself: the namespace has no name, so nothing can
leak or collide, and it disappears with the last fd/process using it (also on SIGKILL). Only
the calling thread moves, so it must happen before any helper thread starts.
"""

import fcntl
import os
import socket
import struct
import subprocess
from dataclasses import dataclass

from netregress import ifreq
from netregress.netns_entry import unshare_netns
from netregress.process import Process

from .config import Config, local_prefix_len, remote_network
from .errors import RuntimeFailure

TUNSETIFF = 0x400454CA
TUNSETOFFLOAD = 0x400454D0
IFF_TUN, IFF_NO_PI, IFF_VNET_HDR = 0x0001, 0x1000, 0x4000
TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6, TUN_F_TSO_ECN = 0x01, 0x02, 0x04, 0x08
SIOCSIFMTU = 0x8922
VNET_HDR_LEN = 10
TUN_NAME = "tun0"


@dataclass
class ChildRun:
    """What a child engine process (ours or upstream's) left behind."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


def run_child(argv: list[str], script: str, timeout: float) -> ChildRun:
    """Run *argv* from *script*'s folder, as upstream's corpus runner does (scripts name
    ``./defaults.sh``-style paths), killed with us and after *timeout* seconds."""
    proc = Process(
        argv,
        stdin=None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=os.path.dirname(os.path.abspath(script)),
    )
    return finish(proc, timeout)


def finish(proc: Process, timeout: float, given: bytes | None = None) -> ChildRun:
    """Write *given* to a started child's stdin, then collect its output and status; killed
    after *timeout* seconds."""
    try:
        stdout, stderr = proc.communicate(given, timeout=timeout)
        status, timed_out = proc.returncode, False
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        status, timed_out = 1, True
    return ChildRun(
        status, stdout.decode(errors="replace"), stderr.decode(errors="replace"), timed_out
    )


def realtime_priority() -> None:
    """Run the calling thread (and threads it starts) SCHED_RR at the lowest priority, like
    upstream, so a loaded machine does not make us inject late. Best effort: without the
    privilege we just run with normal priority."""
    if (os.cpu_count() or 1) < 2:
        return
    try:
        os.sched_setscheduler(
            0, os.SCHED_RR, os.sched_param(os.sched_get_priority_min(os.SCHED_RR))
        )
    except OSError:
        pass


def normal_scheduling() -> None:
    """Set up of every helper process (in the child): undo :func:`realtime_priority`."""
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def enter_fresh_netns() -> None:
    """Move the calling thread into a new, empty network namespace and bring ``lo`` up."""
    try:
        unshare_netns()
    except OSError as err:
        raise RuntimeFailure(
            f"unshare(CLONE_NEWNET) failed: {err.strerror} (the engine needs root / CAP_SYS_ADMIN)"
        ) from None
    set_link_up("lo")


def set_link_up(name: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        ifreq.set_flags(sock.fileno(), name, on=ifreq.IFF_UP | ifreq.IFF_RUNNING)


def _set_mtu(name: str, mtu: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, SIOCSIFMTU, struct.pack("16si", name.encode(), mtu))


def open_tun(cfg: Config) -> int:
    """Create and configure ``tun0``; returns its fd (non-blocking, virtio header on)."""
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise RuntimeFailure(f"open tun device: {err.strerror}") from None
    try:
        fcntl.ioctl(
            fd,
            TUNSETIFF,
            struct.pack("16sH", TUN_NAME.encode(), IFF_TUN | IFF_NO_PI | IFF_VNET_HDR),
        )
        fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN)
        if cfg.mtu not in (0, 1500):
            _set_mtu(TUN_NAME, cfg.mtu)
        set_link_up(TUN_NAME)
    except OSError as err:
        os.close(fd)
        raise RuntimeFailure(f"open tun device: {err.strerror}") from None
    _configure_addresses(cfg)
    return fd


def _configure_addresses(cfg: Config) -> None:
    family = "-6" if cfg.wire_v6 else "-4"
    lines = []
    if not cfg.is_anyip:
        nodad = " nodad" if cfg.wire_v6 else ""
        lines.append(f"addr add {cfg.local_ip}/{local_prefix_len(cfg)} dev {TUN_NAME}{nodad}")
    via = "" if cfg.is_anyip else f" via {cfg.gateway_ip}"
    route = f"route add {remote_network(cfg)} dev {TUN_NAME}{via}"
    lines.append(route)
    done = subprocess.run(
        ["ip", family, "-batch", "-"],
        input="\n".join(lines) + "\n",
        text=True,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeFailure(
            f"error executing route command 'ip {family} {route}': {done.stderr.strip()}"
        )
    if cfg.speed is not None:
        subprocess.run(
            ["ethtool", "-s", TUN_NAME, "speed", str(cfg.speed), "autoneg", "off"],
            capture_output=True,
            check=False,
        )


def check_remote_is_remote(cfg: Config) -> None:
    """Upstream refuses a remote address that is configured locally
    (docs/packetdrill-language.md §8)."""
    family = socket.AF_INET6 if cfg.wire_v6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind((cfg.remote_ip, 0))
        except OSError:
            return
    raise RuntimeFailure(f"error: live_remote_ip {cfg.remote_ip} is not remote")


def reserve_ephemeral_port(cfg: Config) -> tuple[socket.socket, int]:
    """A real ephemeral TCP port for the remote side of passive opens, kept reserved by a
    listening socket for the whole run (docs/packetdrill-language.md §8)."""
    family = socket.AF_INET6 if cfg.socket_v6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind(("::" if cfg.socket_v6 else "0.0.0.0", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]
