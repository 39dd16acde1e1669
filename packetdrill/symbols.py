# SPDX-License-Identifier: GPL-2.0-only
"""Symbolic constants (docs/packetdrill-language.md §6.7): Linux ABI values, resolved when the
event runs.

Python's ``socket``, ``errno``, ``os``, ``select`` and ``fcntl`` modules already carry most of
them with the right values for this machine; only what they lack is written out here.
"""

import errno
import fcntl
import os
import select
import socket

_PREFIXES = (
    "AF_",
    "PF_",
    "SOCK_",
    "IPPROTO_",
    "SOL_",
    "SO_",
    "TCP_",
    "MSG_",
    "IP_",
    "IPV6_",
    "SHUT_",
    "SCM_",
    "POLL",
    "EPOLL",
    "O_",
    "F_",
    "FD_",
    "LOCK_",
    "SEEK_",
    "SPLICE_",
    "SIOC",
    "FIO",
)

_EXTRA: dict[str, int] = {
    "NULL": 0,
    "SOL_TCP": 6,
    "SOL_IP": 0,
    "SOL_IPV6": 41,
    "SOL_UDP": 17,
    "SO_ZEROCOPY": 60,
    "SO_MAX_PACING_RATE": 47,
    "SO_TIMESTAMPING": 37,
    "SO_MEMINFO": 55,
    "SO_BSDCOMPAT": 14,
    "SO_NO_CHECK": 11,
    "SO_PEERSEC": 31,
    "SO_PASSCRED": 16,
    "SO_PEERNAME": 28,
    "SO_ATTACH_FILTER": 26,
    "SO_DETACH_FILTER": 27,
    "SO_TIMESTAMP": 29,
    "SO_SECURITY_AUTHENTICATION": 22,
    "SO_SECURITY_ENCRYPTION_TRANSPORT": 23,
    "SO_SECURITY_ENCRYPTION_NETWORK": 24,
    "SO_BINDTODEVICE": 25,
    "TCP_FASTOPEN_CONNECT": 30,
    "TCP_FASTOPEN": 23,
    "TCP_NOTSENT_LOWAT": 25,
    "TCP_CM_INQ": 36,
    "TCP_INQ": 36,
    "TCP_FASTOPEN_KEY": 33,
    "TCP_FASTOPEN_NO_COOKIE": 34,
    "TCP_USER_TIMEOUT": 18,
    "TCP_TIMESTAMP": 24,
    "TCP_TX_DELAY": 37,
    "TCP_THIN_LINEAR_TIMEOUTS": 16,
    "TCP_THIN_DUPACK": 17,
    "TCP_COOKIE_TRANSACTIONS": 15,
    "TCP_MD5SIG": 14,
    "TCP_CC_INFO": 26,
    "TCP_REPAIR": 19,
    "TCP_SAVE_SYN": 27,
    "TCP_SAVED_SYN": 28,
    "TCP_ZEROCOPY_RECEIVE": 35,
    "TCP_INFINITE_SSTHRESH": 0x7FFFFFFF,
    "TCP_CA_OPEN": 0,
    "TCP_CA_DISORDER": 1,
    "TCP_CA_CWR": 2,
    "TCP_CA_RECOVERY": 3,
    "TCP_CA_LOSS": 4,
    "MSG_FASTOPEN": 0x20000000,
    "MSG_ZEROCOPY": 0x4000000,
    "MSG_PROXY": 0x10,
    "MSG_FIN": 0x200,
    "MSG_SYN": 0x400,
    "MSG_RST": 0x1000,
    "MSG_CMSG_CLOEXEC": 0x40000000,
    "MSG_CONFIRM": 0x800,
    "MSG_ERRQUEUE": 0x2000,
    "MSG_MORE": 0x8000,
    "MSG_EOR": 0x80,
    "SO_EE_ORIGIN_NONE": 0,
    "SO_EE_ORIGIN_LOCAL": 1,
    "SO_EE_ORIGIN_ICMP": 2,
    "SO_EE_ORIGIN_ICMP6": 3,
    "SO_EE_ORIGIN_TXSTATUS": 4,
    "SO_EE_ORIGIN_ZEROCOPY": 5,
    "SO_EE_ORIGIN_TIMESTAMPING": 4,
    "SO_EE_CODE_ZEROCOPY_COPIED": 1,
    "SCM_TIMESTAMPING": 37,
    "SCM_TSTAMP_SND": 0,
    "SCM_TSTAMP_SCHED": 1,
    "SCM_TSTAMP_ACK": 2,
    "SCM_TIMESTAMPING_OPT_STATS": 54,
    "IP_RECVERR": 11,
    "IPV6_RECVERR": 25,
    "IP_MTU": 14,
    "IP_MTU_DISCOVER": 10,
    "IP_PMTUDISC_DONT": 0,
    "IP_PMTUDISC_WANT": 1,
    "IP_PMTUDISC_DO": 2,
    "IP_PMTUDISC_PROBE": 3,
    "IP_FREEBIND": 15,
    "IPV6_MTU": 24,
    "IPV6_MTU_DISCOVER": 23,
    "IPV6_TCLASS": 67,
    "IPV6_HOPLIMIT": 52,
    "SIOCINQ": 0x541B,
    "FIONREAD": 0x541B,
    "POLLRDHUP": 0x2000,
    "POLLREMOVE": 0x1000,
    "POLLMSG": 0x400,
    "EPOLLEXCLUSIVE": 1 << 28,
    "EPOLLRDHUP": 0x2000,
    "EPOLL_CTL_ADD": 1,
    "EPOLL_CTL_DEL": 2,
    "EPOLL_CTL_MOD": 3,
    "F_GETLK": 5,
    "F_SETLK": 6,
    "F_SETLKW": 7,
    "F_GETLK64": 5,
    "F_SETLK64": 6,
    "F_SETLKW64": 7,
    "F_EXLCK": 4,
    "F_SHLCK": 8,
    "F_GETSIG": 11,
    "F_SETSIG": 10,
    "F_NOTIFY": 1026,
    "SPLICE_F_MOVE": 1,
    "SPLICE_F_NONBLOCK": 2,
    "SPLICE_F_MORE": 4,
    "SPLICE_F_GIFT": 8,
    "CAP_EFFECTIVE": 0,
    "CAP_PERMITTED": 1,
    "CAP_INHERITABLE": 2,
    "CAP_CLEAR": 0,
    "CAP_SET": 1,
}

_SOF = [
    "TX_HARDWARE",
    "TX_SOFTWARE",
    "RX_HARDWARE",
    "RX_SOFTWARE",
    "SOFTWARE",
    "SYS_HARDWARE",
    "RAW_HARDWARE",
    "OPT_ID",
    "TX_SCHED",
    "TX_ACK",
    "OPT_CMSG",
    "OPT_TSONLY",
    "OPT_STATS",
    "OPT_PKTINFO",
    "OPT_TX_SWHW",
    "BIND_PHC",
    "OPT_ID_TCP",
]
_TCP_NLA = [
    "PAD",
    "BUSY",
    "RWND_LIMITED",
    "SNDBUF_LIMITED",
    "DATA_SEGS_OUT",
    "TOTAL_RETRANS",
    "PACING_RATE",
    "DELIVERY_RATE",
    "SND_CWND",
    "REORDERING",
    "MIN_RTT",
    "RECUR_RETRANS",
    "DELIVERY_RATE_APP_LMT",
    "SNDQ_SIZE",
    "CA_STATE",
    "SND_SSTHRESH",
    "DELIVERED",
    "DELIVERED_CE",
    "BYTES_SENT",
    "BYTES_RETRANS",
    "DSACK_DUPS",
    "REORD_SEEN",
    "SRTT",
    "TIMEOUT_REHASH",
    "BYTES_NOTSENT",
    "EDT",
    "TTL",
    "REHASH",
]
_CAPS = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
]


def _build() -> dict[str, int]:
    table: dict[str, int] = {}
    for module in (socket, os, select, fcntl):
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith(_PREFIXES) and isinstance(value, int) and name.isupper():
                table[name] = int(value)
    table.update(
        {
            name: value
            for name, value in errno.__dict__.items()
            if name.startswith("E") and isinstance(value, int)
        }
    )
    table.update(_EXTRA)
    table.update({f"SOF_TIMESTAMPING_{name}": 1 << i for i, name in enumerate(_SOF)})
    table.update({f"TCP_NLA_{name}": i for i, name in enumerate(_TCP_NLA)})
    table.update({f"CAP_{name}": i for i, name in enumerate(_CAPS)})
    return table


SYMBOLS = _build()
POLL_NAMES = [
    "POLLIN",
    "POLLPRI",
    "POLLOUT",
    "POLLERR",
    "POLLHUP",
    "POLLNVAL",
    "POLLRDNORM",
    "POLLRDBAND",
    "POLLWRNORM",
    "POLLWRBAND",
    "POLLMSG",
    "POLLREMOVE",
    "POLLRDHUP",
]


def poll_flags(value: int) -> str:
    """``POLLIN|POLLOUT`` spelling of a revents value, as in upstream's messages."""
    names = [name for name in POLL_NAMES if value & SYMBOLS[name]]
    rest = value & ~sum(SYMBOLS[name] for name in names)
    if rest:
        names.append(hex(rest))
    return "|".join(names) if names else "0"
