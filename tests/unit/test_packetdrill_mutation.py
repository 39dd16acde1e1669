# SPDX-License-Identifier: GPL-2.0-only
"""No silent fields: change one expected value in a passing script of our corpus and the
builtin engine must fail, on the check that owns that field.

Each mutant is one real engine run in its own namespace (root). A mutant counts as killed
only if the run fails with the message of the field's own check: a failure for any other
reason (a timing hiccup, a parse error) would prove nothing about the field. The mutants are
few and chosen from quick scripts, so the whole file stays a few seconds per worker.
"""

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from packetdrill.backend import Backend, run_isolated
from packetdrill.conventions import variant_options

TESTS = Path(__file__).parents[1]
PASSIVE = "packetdrill/tcp/passive-open-close.pkt"
SYSCALLS = "packetdrill/misc/syscalls.pkt"
ZEROCOPY = "packetdrill/tcp/zerocopy.pkt"
TS_SACK = "packetdrill/tcp/timestamps-sack.pkt"
ENCAP = "packetdrill/encap/ipip-gre-v4.pkt"
ACK_1001 = "   +0 > . 1:1(0) ack 1001\n"
TS_DATA = "> P. 1:4001(4000) ack 1 <nop,nop,TS val 1100 ecr 200>"
SYNACK_OPTS = "<mss 1460,nop,nop,sackOK,nop,wscale 8>"
RECVMSG = "recvmsg(4, {msg_name(...)=..., msg_iov(1)=[{..., 100}], msg_flags=0}"


@dataclass(frozen=True)
class Mutant:
    """``old`` (found exactly once in ``script``) becomes ``new``; the run must fail with a
    message matching ``killed_by``."""

    kind: str
    script: str
    old: str
    new: str
    killed_by: str
    variant: str = "ipv4"


MUTANTS = [
    # TCP header fields of an outbound packet
    Mutant("tcp_flags", PASSIVE, ACK_1001, ACK_1001.replace("> .", "> P."), r"tcp_psh"),
    Mutant(
        "tcp_ecn_flags",
        "packetdrill/tcp/ecn.pkt",
        "> E. 1:1(0) ack 1001",
        "> . 1:1(0) ack 1001",
        r"tcp_ece",
    ),
    Mutant(
        "tcp_seq", PASSIVE, "> P. 1:2001(2000) ack 1001", "> P. 2:2002(2000) ack 1001", r"tcp_seq"
    ),
    Mutant(
        "tcp_ack_seq",
        PASSIVE,
        "> F. 2001:2001(0) ack 1001",
        "> F. 2001:2001(0) ack 1000",
        r"tcp_ack_seq",
    ),
    Mutant("tcp_window", PASSIVE, ACK_1001, ACK_1001.replace("\n", " win 1\n"), r"tcp_window"),
    Mutant("tcp_urg_ptr", PASSIVE, ACK_1001, ACK_1001.replace("\n", " urg 1\n"), r"tcp_urg_ptr"),
    Mutant(
        "payload_length",
        "packetdrill/udp/udp-exchange.pkt",
        "> udp (50)",
        "> udp (51)",
        r"live packet payload: expected 51 bytes vs actual 50 bytes",
    ),
    # TCP options
    Mutant(
        "tcp_option_value",
        PASSIVE,
        SYNACK_OPTS,
        SYNACK_OPTS.replace("wscale 8", "wscale 7"),
        r"bad value in outbound TCP option",
    ),
    Mutant(
        "tcp_option_list",
        PASSIVE,
        SYNACK_OPTS,
        "<mss 1460,nop,nop,sackOK,nop,nop,nop,nop>",
        r"bad outbound TCP options",
    ),
    Mutant(
        "tcp_timestamp_val",
        TS_SACK,
        TS_DATA,
        TS_DATA.replace("val 1100", "val 9100"),
        r"bad outbound TCP timestamp value",
    ),
    Mutant(
        "tcp_timestamp_ecr",
        TS_SACK,
        TS_DATA,
        TS_DATA.replace("ecr 200", "ecr 201"),
        r"bad outbound TCP timestamp echo reply",
    ),
    # IP header fields
    Mutant("ip_ecn", "packetdrill/tcp/ecn.pkt", "> [ect0] EP.", "> [ect1] EP.", r"ip_ecn"),
    Mutant("ip_tos", PASSIVE, ACK_1001, ACK_1001.replace("> .", "> (tos 0x10) ."), r"field tos"),
    Mutant("ip_ttl", PASSIVE, ACK_1001, ACK_1001.replace("> .", "> (ttl 255) ."), r"ipv4_ttl"),
    Mutant(
        "ipv6_flowlabel",
        "packetdrill/tcp/flowlabel-v6.pkt",
        "> (flowlabel 0x1) P.",
        "> (flowlabel 0x2) P.",
        r"expected a different flowlabel",
        "ipv6",
    ),
    # ICMP
    Mutant(
        "icmp_code",
        ENCAP,
        "> icmp unreachable port_unreachable\n",
        "> icmp unreachable host_unreachable\n",
        r"icmp_code",
    ),
    Mutant("icmp_quoted_size", ENCAP, "[raw (66)]", "[raw (67)]", r"live packet payload"),
    # system calls
    Mutant("syscall_result", SYSCALLS, "2) = 200", "2) = 199", r"Expected result 199"),
    Mutant(
        "errno",
        SYSCALLS,
        "read(4, ..., 100) = -1 EAGAIN",
        "read(4, ..., 100) = -1 EINTR",
        r"Expected errno 4",
    ),
    Mutant("ioctl_value", SYSCALLS, "SIOCINQ, [300]", "SIOCINQ, [299]", r"Bad ioctl optval"),
    Mutant(
        "getsockopt_int",
        SYSCALLS,
        "SO_REUSEADDR, [1], [4]",
        "SO_REUSEADDR, [0], [4]",
        r"Bad getsockopt optval: expected: 0 actual: 1",
    ),
    Mutant(
        "getsockopt_string",
        SYSCALLS,
        '"reno", [4]) = 0',
        '"rena", [4]) = 0',
        r"Bad getsockopt optval: expected: 'rena'",
    ),
    Mutant(
        "poll_revents", SYSCALLS, "revents=POLLIN|POLLOUT", "revents=POLLIN", r"Expected revents"
    ),
    Mutant(
        "epoll_events",
        SYSCALLS,
        "{events=EPOLLIN, fd=3}, 1, 0) = 1",
        "{events=EPOLLOUT, fd=3}, 1, 0) = 1",
        r"epoll_event->events",
    ),
    Mutant(
        "epoll_data",
        SYSCALLS,
        "{events=EPOLLIN, fd=3}, 1, 0) = 1",
        "{events=EPOLLIN, fd=4}, 1, 0) = 1",
        r"epoll_event->data",
    ),
    Mutant(
        "msg_flags",
        SYSCALLS,
        RECVMSG,
        RECVMSG.replace("msg_flags=0", "msg_flags=MSG_TRUNC"),
        r"Expected msg_flags",
    ),
    # control messages
    Mutant(
        "cmsg_level",
        ZEROCOPY,
        "cmsg_level=CMSG_LEVEL_IP",
        "cmsg_level=SOL_SOCKET",
        r"Bad level in cmsg 0",
    ),
    Mutant(
        "cmsg_type", ZEROCOPY, "cmsg_type=CMSG_TYPE_RECVERR", "cmsg_type=99", r"Bad type in cmsg 0"
    ),
    Mutant("cmsg_ee_errno", ZEROCOPY, "ee_errno=0", "ee_errno=1", r"Bad errno in extended err"),
    Mutant(
        "cmsg_ee_origin",
        ZEROCOPY,
        "ee_origin=SO_EE_ORIGIN_ZEROCOPY",
        "ee_origin=SO_EE_ORIGIN_LOCAL",
        r"Bad origin in extended err",
    ),
    Mutant("cmsg_ee_type", ZEROCOPY, "ee_type=0", "ee_type=1", r"Bad type in extended err"),
    Mutant(
        "cmsg_ee_code",
        ZEROCOPY,
        "ee_code=SO_EE_CODE_ZEROCOPY_COPIED",
        "ee_code=0",
        r"Bad code in extended err",
    ),
    Mutant("cmsg_ee_info", ZEROCOPY, "ee_info=0", "ee_info=1", r"Bad info in extended err"),
    Mutant("cmsg_ee_data", ZEROCOPY, "ee_data=0", "ee_data=1", r"Bad data in extended err"),
    # time, code blocks (tcp_info), shell commands
    Mutant(
        "event_time",
        TS_SACK,
        "   +0 > . 1:1001(1000) ack 1 <",
        " +.05 > . 1:1001(1000) ack 1 <",
        r"timing error: expected outbound packet",
    ),
    Mutant(
        "tcp_info",
        "packetdrill/misc/code-and-commands.pkt",
        "tcpi_snd_mss == 1000",
        "tcpi_snd_mss == 1001",
        r"error executing code",
    ),
    Mutant(
        "shell_command",
        "packetdrill/misc/code-and-commands.pkt",
        "grep -q TcpPassiveOpens",
        "grep -q TcpActiveOpens",
        r"error executing `.*` command",
    ),
    # values no engine can compare: rejected, never ignored
    Mutant(
        "rejected_outbound_ports",
        PASSIVE,
        ACK_1001,
        ACK_1001.replace("> .", "> 1>2 ."),
        r"semantic error: unsupported: ports of an outbound packet",
    ),
    Mutant(
        "rejected_buffer_contents",
        SYSCALLS,
        "read(6, ..., 10) = 5",
        'read(6, "abcde", 10) = 5',
        r"Expected \.\.\. or NULL for buffer",
    ),
    Mutant(
        "rejected_iovec_contents",
        SYSCALLS,
        "readv(4, [{..., 100}, {",
        'readv(4, [{"abc", 100}, {',
        r"semantic error: unsupported: iovec contents",
    ),
    Mutant(
        "rejected_address",
        "packetdrill/udp/udp-exchange.pkt",
        "recvfrom(3, ..., 1000, 0, ..., ...)",
        "recvfrom(3, ..., 1000, 0, 7, ...)",
        r"Bad type; actual: integer expected: ellipsis",
    ),
]

# Every kind of value the language lets a script expect; each needs a mutant above.
REQUIRED_KINDS = {
    "tcp_flags",
    "tcp_ecn_flags",
    "tcp_seq",
    "tcp_ack_seq",
    "tcp_window",
    "tcp_urg_ptr",
    "payload_length",
    "tcp_option_value",
    "tcp_option_list",
    "tcp_timestamp_val",
    "tcp_timestamp_ecr",
    "ip_ecn",
    "ip_tos",
    "ip_ttl",
    "ipv6_flowlabel",
    "icmp_code",
    "icmp_quoted_size",
    "syscall_result",
    "errno",
    "ioctl_value",
    "getsockopt_int",
    "getsockopt_string",
    "poll_revents",
    "epoll_events",
    "epoll_data",
    "msg_flags",
    "cmsg_level",
    "cmsg_type",
    "cmsg_ee_errno",
    "cmsg_ee_origin",
    "cmsg_ee_type",
    "cmsg_ee_code",
    "cmsg_ee_info",
    "cmsg_ee_data",
    "event_time",
    "tcp_info",
    "shell_command",
    "rejected_outbound_ports",
    "rejected_buffer_contents",
    "rejected_iovec_contents",
    "rejected_address",
}


def test_every_kind_of_expected_value_has_a_mutant() -> None:
    assert {m.kind for m in MUTANTS} == REQUIRED_KINDS


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.kind)
def test_the_engine_kills_the_mutant(mutant: Mutant, tmp_path: Path) -> None:
    source = TESTS / mutant.script
    text = source.read_text()
    assert text.count(mutant.old) == 1, f"{mutant.script}: mutation site not unique"
    if "skip-if-kernel-has" in text:
        from netns import features

        if any(features.has(name) for name in ("ipip", "gre")):
            pytest.skip(f"{source.name} needs a kernel without ipip/gre")
    # Same layout as the corpus, so the script's `../defaults.sh` resolves.
    shutil.copy(TESTS / "packetdrill" / "defaults.sh", tmp_path / "defaults.sh")
    (tmp_path / "dir").mkdir()
    path = tmp_path / "dir" / source.name
    path.write_text(text.replace(mutant.old, mutant.new))
    result = run_isolated(
        Backend("builtin"),
        str(path),
        variant_options(mutant.variant) + [("send_omit_free", None)],
        timeout=60,
    )
    assert not result.passed, f"mutant survived: {mutant}"
    assert "internal engine error" not in result.message, result.message
    assert re.search(mutant.killed_by, result.message), (
        f"killed by another check than /{mutant.killed_by}/:\n{result.message}"
    )
