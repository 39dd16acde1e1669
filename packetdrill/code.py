# SPDX-License-Identifier: GPL-2.0-only
"""Shell commands and ``%{ }%`` Python code blocks (docs/packetdrill-language.md §7.1, §7.2).

Code blocks do not run during the script: at the event's time we snapshot ``TCP_INFO``,
``TCP_CC_INFO`` and ``SO_MEMINFO`` of the socket under test, and after the cleanup command one
generated Python file runs with every snapshot as plain ``tcpi_*`` variables, like upstream.
"""

import os
import signal
import socket
import struct
from dataclasses import dataclass

from netregress.process import Process
from netregress.spans import span

from .errors import RuntimeFailure
from .netenv import normal_scheduling

# struct tcp_info (include/uapi/linux/tcp.h, 6.18): (name, struct format) in order.
_TCP_INFO = (
    [
        ("state", "B"),
        ("ca_state", "B"),
        ("retransmits", "B"),
        ("probes", "B"),
        ("backoff", "B"),
        ("options", "B"),
        ("wscale", "B"),
        ("app_limited", "B"),
    ]
    + [
        (n, "I")
        for n in (
            "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets "
            "last_data_sent last_ack_sent last_data_recv last_ack_recv pmtu rcv_ssthresh "
            "rtt rttvar snd_ssthresh snd_cwnd advmss reordering rcv_rtt rcv_space total_retrans"
        ).split()
    ]
    + [(n, "Q") for n in ("pacing_rate max_pacing_rate bytes_acked bytes_received").split()]
    + [
        (n, "I")
        for n in ("segs_out segs_in notsent_bytes min_rtt data_segs_in data_segs_out").split()
    ]
    + [
        ("delivery_rate", "Q"),
        ("busy_time", "Q"),
        ("rwnd_limited", "Q"),
        ("sndbuf_limited", "Q"),
        ("delivered", "I"),
        ("delivered_ce", "I"),
        ("bytes_sent", "Q"),
        ("bytes_retrans", "Q"),
    ]
    + [(n, "I") for n in "dsack_dups reord_seen rcv_ooopack snd_wnd rcv_wnd rehash".split()]
    + [
        ("total_rto", "H"),
        ("total_rto_recoveries", "H"),
        ("total_rto_time", "I"),
    ]
    + [
        (n, "I")
        for n in (
            "received_ce delivered_e1_bytes delivered_e0_bytes delivered_ce_bytes "
            "received_e1_bytes received_e0_bytes received_ce_bytes ecn_word"
        ).split()
    ]
)
_TCP_INFO_FMT = "=" + "".join(fmt for _, fmt in _TCP_INFO)
_TCP_INFO_LEN = struct.calcsize(_TCP_INFO_FMT)
_MEMINFO = [
    "RMEM_ALLOC",
    "RCVBUF",
    "WMEM_ALLOC",
    "SNDBUF",
    "FWD_ALLOC",
    "WMEM_QUEUED",
    "OPTMEM",
    "BACKLOG",
    "DROPS",
]
_CONSTANTS = """TCP_ESTABLISHED = 1; TCP_SYN_SENT = 2; TCP_SYN_RECV = 3; TCP_FIN_WAIT1 = 4
TCP_FIN_WAIT2 = 5; TCP_TIME_WAIT = 6; TCP_CLOSE = 7; TCP_CLOSE_WAIT = 8; TCP_LAST_ACK = 9
TCP_LISTEN = 10; TCP_CLOSING = 11
TCP_CA_Open = 0; TCP_CA_Disorder = 1; TCP_CA_CWR = 2; TCP_CA_Recovery = 3; TCP_CA_Loss = 4
TCPI_OPT_TIMESTAMPS = 1; TCPI_OPT_SACK = 2; TCPI_OPT_WSCALE = 4; TCPI_OPT_ECN = 8
TCPI_OPT_ECN_SEEN = 16; TCPI_OPT_SYN_DATA = 32; TCPI_OPT_USEC_TS = 64; TCPI_OPT_TFO_CHILD = 128
"""
_PREAMBLE = """import sys
def _netregress_hook(kind, value, tb):
    sys.stderr.write('%s:%d: error in Python code\\n' % (_file, _line))
    sys.__excepthook__(kind, value, tb)
sys.excepthook = _netregress_hook
"""


def tcp_info_fields(raw: bytes) -> dict[str, int]:
    """Decode a (possibly short) TCP_INFO buffer; fields the kernel did not return read 0."""
    values = struct.unpack(_TCP_INFO_FMT, raw[:_TCP_INFO_LEN].ljust(_TCP_INFO_LEN, b"\0"))
    info = dict(zip((name for name, _ in _TCP_INFO), values, strict=True))
    wscale, app, ecn = info.pop("wscale"), info.pop("app_limited"), info.pop("ecn_word")
    info["snd_wscale"], info["rcv_wscale"] = wscale & 0xF, wscale >> 4
    info["delivery_rate_app_limited"] = app & 1
    info["ecn_mode"], info["accecn_opt_seen"] = ecn & 3, (ecn >> 2) & 3
    info["accecn_fail_mode"], info["options2"] = (ecn >> 4) & 0xF, ecn >> 8
    return info


@dataclass
class CodeSnapshot:
    line: int
    code: str
    tcp_info: bytes
    cc_info: bytes
    meminfo: bytes


def snapshot(fd: int, line: int, code: str) -> CodeSnapshot:
    """Collect the socket data a code block sees (at the block's event time)."""
    sock = socket.socket(fileno=os.dup(fd))
    try:

        def get(level: int, name: int, size: int) -> bytes:
            try:
                return sock.getsockopt(level, name, size)
            except OSError:
                return b""

        tcp_info = get(socket.IPPROTO_TCP, socket.TCP_INFO, 512)
        if not tcp_info:
            raise RuntimeFailure("can't find getsockopt to get TCP info")
        return CodeSnapshot(
            line, code, tcp_info, get(socket.IPPROTO_TCP, 26, 64), get(socket.SOL_SOCKET, 55, 36)
        )
    finally:
        sock.close()


def render(path: str, snapshots: list[CodeSnapshot]) -> str:
    """The Python file that runs every code block with its snapshot, in script order."""
    parts = [_PREAMBLE]
    for snap in snapshots:
        parts.append(_CONSTANTS)
        parts.extend(
            f"tcpi_{name} = {value}" for name, value in tcp_info_fields(snap.tcp_info).items()
        )
        cc = snap.cc_info.ljust(20, b"\0")
        bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain = struct.unpack("=5I", cc[:20])
        parts += [
            f"bbr_bw_lo = {bw_lo}",
            f"bbr_bw_hi = {bw_hi}",
            f"bbr_bw = {bw_hi << 32 | bw_lo}",
            f"bbr_min_rtt = {min_rtt}",
            f"bbr_pacing_gain = {pacing_gain}",
            f"bbr_cwnd_gain = {cwnd_gain}",
        ]
        d_enabled, d_ce, d_alpha, d_ab_ecn, d_ab_tot = struct.unpack("=HHIII", cc[:16])
        parts += [
            f"dctcp_enabled = {d_enabled}",
            f"dctcp_ce_state = {d_ce}",
            f"dctcp_alpha = {d_alpha}",
            f"dctcp_ab_ecn = {d_ab_ecn}",
            f"dctcp_ab_tot = {d_ab_tot}",
        ]
        v_enabled, v_rttcnt, v_rtt, v_minrtt = struct.unpack("=4I", cc[:16])
        parts += [
            f"tcpv_enabled = {v_enabled}",
            f"tcpv_rttcnt = {v_rttcnt}",
            f"tcp_rtt = {v_rtt}",
            f"tcp_minrtt = {v_minrtt}",
        ]
        mem = struct.unpack("=9I", snap.meminfo.ljust(36, b"\0")[:36])
        parts.extend(
            f"SK_MEMINFO_{name} = {value}" for name, value in zip(_MEMINFO, mem, strict=True)
        )
        parts += [f"_file = {path!r}", f"_line = {snap.line}", snap.code]
    return "\n".join(parts) + "\n"


def run_code(path: str, snapshots: list[CodeSnapshot], command: str, verbose: bool) -> None:
    """Write and run the generated file; failures are ``error executing code`` errors."""
    import tempfile  # only scripts with code blocks pay for it (engine start-up budget)

    text = render(path, snapshots)
    handle, file_name = tempfile.mkstemp(prefix="code_", dir="/tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        if verbose:
            print(text, end="")
            print(f"running: '{command} {file_name}'", flush=True)
        reason = run_shell(f"{command} {file_name}")
        if reason:
            raise RuntimeFailure(
                f"{path}: error executing code: '{command}' returned {reason}"
                if reason.startswith("non-zero")
                else f"{path}: error executing code: '{command}' {reason}"
            )
    finally:
        os.unlink(file_name)


# Process groups of the shells we started: what they left running in the background is
# killed when the run ends (the namespace would otherwise live on with them).
_HELPER_GROUPS: list[int] = []
# nstat keeps its history in one file per user (/tmp/.nstat.u0) shared by every namespace, so
# parallel scripts using `nstat` would read each other's deltas: each run gets its own file.
_NSTAT_HISTORY = f"/tmp/.netregress-packetdrill-nstat.{os.getpid()}"


def kill_helpers() -> None:
    """SIGKILL whatever is left of our shell commands' process groups; drop the run's files."""
    while _HELPER_GROUPS:
        try:
            os.killpg(_HELPER_GROUPS.pop(), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.unlink(_NSTAT_HISTORY)
    except FileNotFoundError:
        pass


def _shell_setup() -> None:
    """In the child: the signal mask its parent had before :func:`run_shell` blocked SIGCHLD
    (a shell waits for its own children by SIGCHLD), and normal scheduling."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    normal_scheduling()


def run_shell(command: str) -> str:
    """Run ``/bin/sh -c command`` as our direct child like ``system()``; returns "" on success
    or upstream's reason text (``non-zero status N``, ``got signal N (name)``).

    Like ``system()``, the calling thread blocks SIGCHLD until the child is reaped. That is
    visible to a script: the kernel then hands the child's exit signal to another thread,
    the one in a blocking system call, and ends its wait (a ``recv(MSG_WAITALL)`` returns
    what it has, a write what it has copied), as it does under upstream's binary, where
    every command, init and cleanup command and code block runs through ``system()``."""
    with span("shell"):
        return _run_shell(command)


def _run_shell(command: str) -> str:
    env = dict(os.environ, PACKETDRILL_PID=str(os.getpid()))
    env.setdefault("NSTAT_HISTORY", _NSTAT_HISTORY)
    unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        proc = Process(
            ["/bin/sh", "-c", command],
            stdin=None,
            stdout=None,
            stderr=None,
            env=env,
            process_group=0,
            setup=_shell_setup,
        )
        _HELPER_GROUPS.append(proc.pid)
        try:
            status = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
    if status < 0 and -status in (signal.SIGINT, signal.SIGQUIT):
        return f"got signal {-status} ({signal.Signals(-status).name})"
    if status > 0:
        return f"non-zero status {status}"
    return ""
