# SPDX-License-Identifier: GPL-2.0-only
"""System-call executor (docs/packetdrill-language.md §6): evaluates arguments, calls libc, checks
result, errno and outputs.

Calls go through ``ctypes`` straight to libc rather than Python's socket objects: the script
asserts on raw results and errno values (``read(4, NULL, 10) = -1 EFAULT``), which Python's
wrappers would turn into exceptions or refuse outright. ctypes also releases the GIL, so a
blocking call on the syscall thread never stalls the main thread.
"""

import ctypes
import ipaddress
import mmap
import os
import socket
import struct
import time
from collections.abc import Callable

from . import protocols as P
from .config import socket_address
from .conn import Conn
from .errors import RuntimeFailure, TimelineDrift
from .model import Expr, SyscallEvent
from .state import FdEntry, State
from .symbols import SYMBOLS, poll_flags

libc = ctypes.CDLL(None, use_errno=True)
_vp, _sz, _ss, _int, _uint = (
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_ssize_t,
    ctypes.c_int,
    ctypes.c_uint,
)
_PROTOS = {
    "socket": (_int, [_int, _int, _int]),
    "bind": (_int, [_int, _vp, _uint]),
    "listen": (_int, [_int, _int]),
    "accept": (_int, [_int, _vp, _vp]),
    "connect": (_int, [_int, _vp, _uint]),
    "read": (_ss, [_int, _vp, _sz]),
    "write": (_ss, [_int, _vp, _sz]),
    "readv": (_ss, [_int, _vp, _int]),
    "writev": (_ss, [_int, _vp, _int]),
    "recv": (_ss, [_int, _vp, _sz, _int]),
    "recvfrom": (_ss, [_int, _vp, _sz, _int, _vp, _vp]),
    "recvmsg": (_ss, [_int, _vp, _int]),
    "send": (_ss, [_int, _vp, _sz, _int]),
    "sendto": (_ss, [_int, _vp, _sz, _int, _vp, _uint]),
    "sendmsg": (_ss, [_int, _vp, _int]),
    "fcntl": (_int, [_int, _int, ctypes.c_long]),
    "ioctl": (_int, [_int, ctypes.c_ulong, _vp]),
    "close": (_int, [_int]),
    "shutdown": (_int, [_int, _int]),
    "getsockopt": (_int, [_int, _int, _int, _vp, _vp]),
    "setsockopt": (_int, [_int, _int, _int, _vp, _uint]),
    "poll": (_int, [_vp, ctypes.c_ulong, _int]),
    "open": (_int, [ctypes.c_char_p, _int, _int]),
    "sendfile": (_ss, [_int, _int, _vp, _sz]),
    "epoll_create": (_int, [_int]),
    "epoll_ctl": (_int, [_int, _int, _int, _vp]),
    "epoll_wait": (_int, [_int, _vp, _int, _int]),
    "pipe": (_int, [_vp]),
    "splice": (_ss, [_int, _vp, _int, _vp, _sz, _uint]),
    "getsockname": (_int, [_int, _vp, _vp]),
    "getpeername": (_int, [_int, _vp, _vp]),
}
for _name, (_res, _args) in _PROTOS.items():
    getattr(libc, _name).restype = _res
    getattr(libc, _name).argtypes = _args

_EAGER_BUFFER = 1 << 20
FD_RETURNING = frozenset(("socket", "accept", "open", "epoll_create", "cap_set"))
_ARGC = {
    "socket": 3,
    "bind": 3,
    "listen": 2,
    "accept": 3,
    "connect": 3,
    "read": 3,
    "readv": 3,
    "writev": 3,
    "recv": 4,
    "recvfrom": 6,
    "recvmsg": 3,
    "write": 3,
    "send": 4,
    "sendto": 6,
    "sendmsg": 3,
    "close": 1,
    "shutdown": 2,
    "poll": 3,
    "open": 2,
    "sendfile": 4,
    "epoll_create": 1,
    "epoll_ctl": 4,
    "epoll_wait": 4,
    "pipe": 1,
    "splice": 6,
    "cap_set": 3,
}
_TYPE_NAMES = {"binary": "binary_expression", "keyed": "word", "htons": "integer"}
# A brace expression's upstream type, by the first key that identifies it.
_BRACE_TYPES = [
    ("sa_family", "sockaddr_in"),
    ("msg_iov", "msghdr"),
    ("cmsg_level", "cmsg"),
    ("onoff", "linger"),
    ("scm_sec", "scm_timestamping"),
    ("ee_errno", "sock_extended_err"),
    ("events", "epollev"),
]


def type_name(expr: Expr) -> str:
    """The type name upstream prints for an argument in ``Bad type`` errors."""
    if expr.kind != "brace":
        return _TYPE_NAMES.get(expr.kind, expr.kind)
    if expr.items and expr.items[0].key == "fd":  # {fd=, events=[, revents=]}
        return "pollfd"
    for key, name in _BRACE_TYPES:
        value = expr.field(key)
        if value is not None:
            return "sockaddr_in6" if value.value == "AF_INET6" else name
    if len(expr.items) == 2 and expr.items[0].kind == "ellipsis":
        return "iovec"
    return "list"


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint),
        ("iov", ctypes.c_void_p),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


Post = Callable[[], None] | None


def strerror(number: int) -> str:
    return os.strerror(number)


class Executor:
    """Runs one :class:`SyscallEvent` against the live kernel and checks it."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.cfg = state.cfg

    # --- expression evaluation -----------------------------------------------------------
    def type_error(self, expr: Expr, wanted: str) -> RuntimeFailure:
        return RuntimeFailure(f"Bad type; actual: {type_name(expr)} expected: {wanted}")

    def integer(self, expr: Expr) -> int:
        if expr.kind == "integer":
            return int(expr.value)
        if expr.kind == "htons":
            return socket.htons(int(expr.value) & 0xFFFF)
        if expr.kind == "word":
            if expr.value not in SYMBOLS:
                raise RuntimeFailure(f"unknown symbol: '{expr.value}'")
            return SYMBOLS[expr.value]
        if expr.kind == "binary":
            # ``a | b | c`` is a left-deep tree: walk its spine instead of recursing, so a
            # script with thousands of ``|`` cannot exhaust the stack.
            value = 0
            while expr.kind == "binary":
                left, right = expr.items
                if left.kind not in ("integer", "word", "binary", "htons"):
                    raise RuntimeFailure("left hand side of | not an integer")
                value |= self.integer(right)
                expr = left
            return value | self.integer(expr)
        raise self.type_error(expr, "integer")

    def int32(self, expr: Expr) -> int:
        """Upstream's s32: anything from INT_MIN to UINT_MAX, stored as a signed 32-bit
        value (so ``= 4294967295`` expects -1 and a count of 3000000000 is negative)."""
        value = self.integer(expr)
        if not -(2**31) <= value < 2**32:
            raise RuntimeFailure(f"Value out of range for 32-bit integer: {value}")
        return value - 2**32 if value >= 2**31 else value

    def bracketed_int(self, expr: Expr) -> int:
        if expr.kind != "list":
            raise self.type_error(expr, "list")
        if len(expr.items) != 1:
            raise RuntimeFailure("Expected [<integer>] but got multiple elements")
        return self.int32(expr.items[0])

    def live_fd(self, expr: Expr) -> int:
        script_fd = self.int32(expr)
        entry = self.state.fds.get(script_fd)
        if entry is None:
            raise RuntimeFailure(f"unable to find fd with script fd {script_fd}")
        return entry.live

    def entry(self, expr: Expr) -> FdEntry:
        script_fd = self.int32(expr)
        entry = self.state.fds.get(script_fd)
        if entry is None:
            raise RuntimeFailure(f"unable to find fd with script fd {script_fd}")
        return entry

    def buffer(self, size: int) -> ctypes.Array[ctypes.c_char]:
        if size > _EAGER_BUFFER:
            # Lazily zeroed pages, like upstream's malloc(): `read(3, ..., 2000000000)` must
            # not touch 2 GB before the kernel returns the few bytes it has.
            try:
                area = mmap.mmap(-1, size)
            except OSError as err:
                raise RuntimeFailure(
                    f"cannot allocate a {size}-byte buffer: {err.strerror}"
                ) from None
            self.state.keep_alive.append(area)
            return (ctypes.c_char * size).from_buffer(area)
        buf = ctypes.create_string_buffer(max(size, 1))
        self.state.keep_alive.append(buf)
        return buf

    def sockaddr_remote(self) -> bytes:
        return self.sockaddr(self.cfg.remote_ip, self.cfg.connect_port)

    def sockaddr(self, address: str, port: int) -> bytes:
        address = socket_address(self.cfg, address)
        if self.cfg.socket_v6:
            return struct.pack("=H", socket.AF_INET6) + struct.pack(
                "!HI16sI", port, 0, ipaddress.IPv6Address(address).packed, 0
            )
        return struct.pack("=H", socket.AF_INET) + struct.pack(
            "!H4s8x", port, ipaddress.IPv4Address(address).packed
        )

    # --- driver ---------------------------------------------------------------------------
    def execute(self, event: SyscallEvent, on_return: Callable[[], None] | None = None) -> None:
        """Run the call and raise :class:`RuntimeFailure` (bare detail) on any mismatch.

        ``on_return`` runs right after the call returns, before any check: blocking calls
        check their return time there."""
        if event.name in ("psp_rx_assoc", "psp_tx_assoc"):
            raise RuntimeFailure(f"{event.name} needs PSP, which only wire mode supports")
        method = getattr(self, f"sys_{event.name}", None)
        if method is None:
            raise RuntimeFailure(f"Unknown system call: '{event.name}'")
        args = event.args
        if event.name in ("fcntl", "ioctl"):
            if not 2 <= len(args) <= 3:
                raise RuntimeFailure(f"{event.name} expected 2-3 args but got {len(args)}")
        elif event.name in ("getsockopt",):
            if not 4 <= len(args) <= 5:
                raise RuntimeFailure(f"Expected 5 args but got {len(args)}")
        elif event.name in ("write", "setsockopt"):
            want = 3 if event.name == "write" else 5
            if len(args) != want:
                raise RuntimeFailure(f"Expected {want} args but got {len(args)}")
        elif len(args) != _ARGC[event.name]:
            raise RuntimeFailure(f"Expected {_ARGC[event.name]} args but got {len(args)}")
        if event.result.kind not in ("integer",):
            raise self.type_error(event.result, "integer")
        expected = self.int32(event.result)
        ret, err, post = method(args)
        if on_return is not None:
            on_return()
        self.check_result(event, expected, ret, err)
        if post is not None:
            post()
        if event.name in ("socket", "accept", "open", "epoll_create") and ret >= 0:
            with self.state.lock:
                conn = next((c for c in self.state.conns if c.live_fd == ret), None)
            # accept() may reuse a script fd that is still open: as upstream, the newest
            # socket then answers to that number (the older one stays open, unreachable).
            self.register(expected, ret, conn, replace=event.name == "accept")
        if self.cfg.verbose:
            print(f"{event.name} syscall: {time.time():9.6f}", flush=True)

    def check_result(self, event: SyscallEvent, expected: int, ret: int, err: int) -> None:
        if event.name in FD_RETURNING and expected >= 0:
            if ret < 0:
                raise RuntimeFailure(
                    f"Expected non-negative result but got {ret} with errno {err} ({strerror(err)})"
                )
        elif ret != expected:
            raise RuntimeFailure(
                f"Expected result {expected} but got {ret} with errno {err} ({strerror(err)})"
            )
        if event.errno is not None:
            if event.errno not in SYMBOLS:
                raise RuntimeFailure(f"unknown symbol: '{event.errno}'")
            want = SYMBOLS[event.errno]
            if want != err:
                raise RuntimeFailure(
                    f"Expected errno {want} ({strerror(want)}) but got {err} ({strerror(err)})"
                )

    def register(
        self, script_fd: int, live: int, conn: Conn | None = None, replace: bool = False
    ) -> None:
        with self.state.lock:
            if script_fd in self.state.fds and not replace:
                raise RuntimeFailure(f"duplicate fd {script_fd} in script")
            self.state.fds[script_fd] = FdEntry(live, conn)

    @staticmethod
    def call(func: Callable[..., int], *args: object) -> tuple[int, int]:
        ctypes.set_errno(0)
        ret = func(*args)
        return ret, ctypes.get_errno()

    # --- sockets --------------------------------------------------------------------------
    def sys_socket(self, args: list[Expr]) -> tuple[int, int, Post]:
        if args[0].kind == "ellipsis":
            domain: int = socket.AF_INET6 if self.cfg.socket_v6 else socket.AF_INET
        else:
            domain = self.int32(args[0])
        kind, proto = self.int32(args[1]), self.int32(args[2])
        ret, err = self.call(libc.socket, domain, kind, proto)
        if ret >= 0:
            base = kind & 0xF
            l4 = (
                P.IPPROTO_TCP
                if base == socket.SOCK_STREAM
                else (proto if proto in (P.IPPROTO_ICMP, P.IPPROTO_ICMPV6) else P.IPPROTO_UDP)
            )
            self.state.new_conn(l4).live_fd = ret
        return ret, err, None

    def require_ellipsis(self, *exprs: Expr) -> None:
        """Address slots take only ``...`` (the engine's live address), as upstream."""
        for expr in exprs:
            if expr.kind != "ellipsis":
                raise self.type_error(expr, "ellipsis")

    def sys_bind(self, args: list[Expr]) -> tuple[int, int, Post]:
        entry = self.entry(args[0])
        self.require_ellipsis(args[1], args[2])
        addr = self.sockaddr(self.cfg.local_ip, self.cfg.bind_port)
        ret, err = self.call(libc.bind, entry.live, addr, len(addr))
        if ret == 0 and entry.conn is not None:
            entry.conn.local_port = self.cfg.bind_port
        return ret, err, None

    def sys_listen(self, args: list[Expr]) -> tuple[int, int, Post]:
        entry = self.entry(args[0])
        ret, err = self.call(libc.listen, entry.live, self.int32(args[1]))
        if ret == 0 and entry.conn is not None:
            entry.conn.listening = True
            entry.conn.local_port = entry.conn.local_port or self._local_port(entry.live)
        return ret, err, None

    def sys_accept(self, args: list[Expr]) -> tuple[int, int, Post]:
        entry = self.entry(args[0])
        self.require_ellipsis(args[1], args[2])
        addr, addrlen = self.buffer(128), ctypes.c_uint(128)
        ret, err = self.call(libc.accept, entry.live, addr, ctypes.byref(addrlen))
        if ret >= 0:
            peer_port = struct.unpack("!H", addr.raw[2:4])[0]
            child = self._find_child(entry.conn, peer_port)
            if child is None:
                os.close(ret)
                raise RuntimeFailure("unable to find socket matching accept() call")
            child.live_fd, child.accepted = ret, True
        return ret, err, None

    def _find_child(self, listener: Conn | None, peer_port: int) -> Conn | None:
        with self.state.lock:
            candidates = [
                c
                for c in self.state.conns
                if not c.accepted
                and not c.listening
                and c.live_fd is None
                and c.remote_port == peer_port
            ]
            if listener is not None:
                own = [c for c in listener.children if c in candidates]
                candidates = own or candidates
            return candidates[0] if candidates else None

    def _local_port(self, fd: int) -> int:
        addr, addrlen = self.buffer(128), ctypes.c_uint(128)
        if libc.getsockname(fd, addr, ctypes.byref(addrlen)) != 0:
            return 0
        return int.from_bytes(addr.raw[2:4], "big")

    def _start_connect(self, entry: FdEntry) -> None:
        """connect(), or sendto()/sendmsg() with an address (TFO, UDP): as upstream, only a
        new socket starts a connection; one already listening, connecting or accepted keeps
        its flow (the call still gets the remote address).

        A socket new again after an AF_UNSPEC disconnect had a flow already, and the kernel
        may give the new one another local port (and always another ISN): like upstream,
        which relearns both from the connecting socket's outbound packets, the old values
        are forgotten here and learned again (the port by getsockname() after the call or
        from the first packet, the ISN from the SYN)."""
        conn = entry.conn
        if conn is None:
            return
        with self.state.lock:
            if conn.listening or conn.connecting or conn.accepted:
                return
            conn.local_port, conn.local_isn_known = 0, False
            conn.connecting = True
            conn.remote_port = self.cfg.connect_port
            self.state.sut = conn

    def _disconnect(self, entry: FdEntry, family: int) -> None:
        """An AF_UNSPEC address dissolves the association: the socket counts as new again,
        so a later connect() or sendto() starts a connection (upstream's rule)."""
        if family == socket.AF_UNSPEC and entry.conn is not None:
            with self.state.lock:
                entry.conn.listening = entry.conn.connecting = entry.conn.accepted = False

    def _after_connect(self, entry: FdEntry) -> None:
        if entry.conn is not None and not entry.conn.local_port:
            entry.conn.local_port = self._local_port(entry.live)

    def sys_connect(self, args: list[Expr]) -> tuple[int, int, Post]:
        entry = self.entry(args[0])
        if args[1].kind == "ellipsis":
            addr = self.sockaddr_remote()
            self._start_connect(entry)
        else:
            family = self.int32(args[1])
            addr = struct.pack("=H", family) + bytes(26 if self.cfg.socket_v6 else 14)
            self._disconnect(entry, family)
        ret, err = self.call(libc.connect, entry.live, addr, len(addr))
        self._after_connect(entry)
        return ret, err, None

    # --- data transfer ------------------------------------------------------------------
    def data_buffer(self, expr: Expr, size: int) -> ctypes.Array[ctypes.c_char] | None:
        if expr.kind == "ellipsis":
            # A negative count is a huge size_t for the kernel; upstream's malloc() of it
            # fails and the call gets NULL, so the kernel can never write past a buffer.
            return self.buffer(size) if size >= 0 else None
        if expr.kind in ("integer", "word") and self.integer(expr) == 0:
            return None
        raise RuntimeFailure("Expected ... or NULL for buffer")

    def sys_read(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, count = self.live_fd(args[0]), self.int32(args[2])
        ret, err = self.call(libc.read, fd, self.data_buffer(args[1], count), count)
        return ret, err, None

    def sys_write(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, count = self.live_fd(args[0]), self.int32(args[2])
        ret, err = self.call(libc.write, fd, self.data_buffer(args[1], count), count)
        return ret, err, None

    def sys_recv(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, count = self.live_fd(args[0]), self.int32(args[2])
        ret, err = self.call(
            libc.recv, fd, self.data_buffer(args[1], count), count, self.int32(args[3])
        )
        return ret, err, None

    def sys_send(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, count = self.live_fd(args[0]), self.int32(args[2])
        ret, err = self.call(
            libc.send, fd, self.data_buffer(args[1], count), count, self.int32(args[3])
        )
        return ret, err, None

    def sys_recvfrom(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, count = self.live_fd(args[0]), self.int32(args[2])
        self.require_ellipsis(args[4], args[5])
        addr, addrlen = self.buffer(128), ctypes.c_uint(128)
        ret, err = self.call(
            libc.recvfrom,
            fd,
            self.data_buffer(args[1], count),
            count,
            self.int32(args[3]),
            addr,
            ctypes.byref(addrlen),
        )
        return ret, err, None

    def sys_sendto(self, args: list[Expr]) -> tuple[int, int, Post]:
        entry, count = self.entry(args[0]), self.int32(args[2])
        if args[4].kind == "ellipsis":
            addr: bytes | None = self.sockaddr_remote()
            self._start_connect(entry)
        else:
            family = self.int32(args[4])
            addr = struct.pack("=H", family) + bytes(26 if self.cfg.socket_v6 else 14)
            self._disconnect(entry, family)
        self.require_ellipsis(args[5])
        buf = self.data_buffer(args[1], count)
        if (
            buf is not None
            and count >= 8
            and entry.conn is not None
            and entry.conn.proto in (P.IPPROTO_ICMP, P.IPPROTO_ICMPV6)
        ):
            # A ping socket only sends echo requests: like upstream, the script's zeroed
            # buffer becomes one (the kernel fills in id and checksum).
            buf[0] = bytes([128 if self.cfg.wire_v6 else 8])
        ret, err = self.call(
            libc.sendto, entry.live, buf, count, self.int32(args[3]), addr, len(addr) if addr else 0
        )
        self._after_connect(entry)
        return ret, err, None

    def iovecs(self, expr: Expr) -> tuple[ctypes.Array[_Iovec], int]:
        if expr.kind != "list":
            raise self.type_error(expr, "list")
        array = (_Iovec * max(1, len(expr.items)))()
        for i, item in enumerate(expr.items):
            if item.kind != "brace" or len(item.items) != 2:
                raise self.type_error(item, "iovec")
            length = self.integer(item.items[1])
            array[i].base = ctypes.cast(self.buffer(length), ctypes.c_void_p)
            array[i].len = length
        self.state.keep_alive.append(array)
        return array, len(expr.items)

    def _vector(self, func: Callable[..., int], args: list[Expr]) -> tuple[int, int, Post]:
        fd = self.live_fd(args[0])
        array, count = self.iovecs(args[1])
        iovcnt = self.int32(args[2])
        if iovcnt != count:
            raise RuntimeFailure(f"iov_count {iovcnt} does not match {count}-element iovec array")
        ret, err = self.call(func, fd, array, iovcnt)
        return ret, err, None

    def sys_readv(self, args: list[Expr]) -> tuple[int, int, Post]:
        return self._vector(libc.readv, args)

    def sys_writev(self, args: list[Expr]) -> tuple[int, int, Post]:
        return self._vector(libc.writev, args)

    def msghdr(self, expr: Expr, for_recv: bool) -> _Msghdr:
        if expr.kind != "brace":
            raise self.type_error(expr, "msghdr")
        msg = _Msghdr()
        iov_expr = expr.field("msg_iov")
        if iov_expr is not None:
            array, count = self.iovecs(iov_expr)
            index = next(i.index for i in expr.items if i.kind == "keyed" and i.key == "msg_iov")
            if index is not None and index.kind != "ellipsis" and self.integer(index) != count:
                raise RuntimeFailure(
                    f"msg_iovlen {self.integer(index)} does not match {count}-element iovec array"
                )
            msg.iov, msg.iovlen = ctypes.cast(array, ctypes.c_void_p), count
        name = expr.field("msg_name")
        if name is not None and for_recv:
            buf = self.buffer(128)
            msg.name, msg.namelen = ctypes.cast(buf, ctypes.c_void_p), 128
        elif name is not None and name.kind == "ellipsis" and not for_recv:
            raw = self.sockaddr_remote()
            buf = self.buffer(len(raw))
            ctypes.memmove(buf, raw, len(raw))
            msg.name, msg.namelen = ctypes.cast(buf, ctypes.c_void_p), len(raw)
        if expr.field("msg_control") is not None and for_recv:
            buf = self.buffer(4096)
            msg.control, msg.controllen = ctypes.cast(buf, ctypes.c_void_p), 4096
        self.state.keep_alive.append(msg)
        return msg

    def sys_sendmsg(self, args: list[Expr]) -> tuple[int, int, Post]:
        entry = self.entry(args[0])
        msg = self.msghdr(args[1], for_recv=False)
        if msg.name:
            self._start_connect(entry)  # implicit connect, e.g. MSG_FASTOPEN (as sendto)
        flags_expr = args[1].field("msg_flags")
        if flags_expr is not None and self.integer(flags_expr) != 0:
            raise RuntimeFailure("sendmsg ignores msg_flags field in msghdr")
        ret, err = self.call(libc.sendmsg, entry.live, ctypes.byref(msg), self.int32(args[2]))
        if msg.name:
            self._after_connect(entry)
        return ret, err, None

    def sys_recvmsg(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd = self.live_fd(args[0])
        msg = self.msghdr(args[1], for_recv=True)
        # As upstream: msg_flags starts as the script's value (0 if absent) and is always
        # compared, so a failing call (which leaves it untouched) matches its own script.
        flags_expr = args[1].field("msg_flags")
        want = (self.integer(flags_expr) if flags_expr is not None else 0) & 0xFFFFFFFF
        msg.flags = ctypes.c_int(want).value
        ret, err = self.call(libc.recvmsg, fd, ctypes.byref(msg), self.int32(args[2]))

        def post() -> None:
            got = msg.flags & 0xFFFFFFFF
            if want != got:
                raise RuntimeFailure(f"Expected msg_flags 0x{want:08X} but got 0x{got:08X}")
            control = args[1].field("msg_control")
            if control is not None:
                raw = ctypes.string_at(msg.control, msg.controllen) if msg.control else b""
                self.check_cmsgs(control, raw)

        return ret, err, post

    def check_cmsgs(self, expected: Expr, raw: bytes) -> None:
        actual: list[tuple[int, int, bytes]] = []
        offset = 0
        while offset + 16 <= len(raw):
            length, level, kind = struct.unpack("=Qii", raw[offset : offset + 16])
            if length < 16:
                break
            actual.append((level, kind, raw[offset + 16 : offset + length]))
            offset += (length + 7) & ~7
        wanted = expected.items if expected.kind == "list" else []
        if len(actual) > len(wanted):
            raise RuntimeFailure(f"received more than {len(wanted)} cmsgs")
        if len(actual) < len(wanted):
            raise RuntimeFailure(f"received only {len(actual)} cmsgs")
        for i, (want, (level, kind, data)) in enumerate(zip(wanted, actual, strict=True)):
            want_level = self.integer(want.field("cmsg_level") or Expr("integer", 0))
            want_type = self.integer(want.field("cmsg_type") or Expr("integer", 0))
            if want_level != level:
                raise RuntimeFailure(f"Bad level in cmsg {i}: expected={want_level} actual={level}")
            if want_type != kind:
                raise RuntimeFailure(f"Bad type in cmsg {i}: expected={want_type} actual={kind}")
            want_data = want.field("cmsg_data")
            size = cmsg_data_size(want_data, level)
            if size is not None and size != len(data):
                raise RuntimeFailure(
                    f"Bad len in cmsg {i}: expected={16 + size} actual={16 + len(data)}"
                )
            self.check_cmsg_data(i, want_data, data)

    def check_cmsg_data(self, index: int, want: Expr | None, data: bytes) -> None:
        if want is None:  # the parser refuses a cmsg without cmsg_data
            return
        if want.kind == "brace" and want.field("ee_errno") is not None:
            # struct sock_extended_err: errno u32, origin/type/code u8, one pad byte,
            # info u32, data u32; upstream compares each at its width, unsigned.
            errno, origin, kind, code, _pad, info, ee_data = struct.unpack("=IBBBBII", data[:16])
            for name, got, mask in (
                ("errno", errno, 0xFFFFFFFF),
                ("origin", origin, 0xFF),
                ("type", kind, 0xFF),
                ("code", code, 0xFF),
                ("info", info, 0xFFFFFFFF),
                ("data", ee_data, 0xFFFFFFFF),
            ):
                exp = want.field(f"ee_{name}")
                if exp is not None and self.integer(exp) & mask != got:
                    raise RuntimeFailure(
                        f"Bad {name} in extended err {index}: "
                        f"expected={self.integer(exp) & mask} actual={got}"
                    )
        elif want.kind == "brace" and want.field("scm_sec") is not None:
            sec, nsec = struct.unpack("=qq", data[:16])
            want_sec = self.integer(want.field("scm_sec") or Expr("integer", 0))
            want_nsec = self.integer(want.field("scm_nsec") or Expr("integer", 0))
            if want_sec or want_nsec:
                live_usecs = self.state.clock.to_script(sec + nsec / 1e9)
                script_usecs = want_sec * 1000000 + want_nsec // 1000
                off, tolerance, drift = (
                    live_usecs - script_usecs,
                    self.cfg.tolerance.base(0),
                    self.state.drift,
                )
                if abs(off) > tolerance and drift > tolerance and -tolerance <= off <= drift:
                    # The stamp is from when the packet left, and this run fell behind.
                    raise TimelineDrift(
                        f"timing error: expected SO_TIMESTAMPING value {script_usecs} but got "
                        f"{live_usecs}, {off / 1000:+.1f} ms off the script's clock and within "
                        f"the {drift / 1000:.1f} ms this run's timeline fell behind the "
                        "script's (the machine stalled)",
                        drift,
                    )
                if abs(off) > tolerance:
                    raise RuntimeFailure(
                        f"Bad timestamp in scm_timestamping {index}: "
                        f"expected={script_usecs} actual={live_usecs}"
                    )
        elif want.kind in ("integer", "word", "binary"):
            got = int.from_bytes(data[:4], "little")
            if self.integer(want) & 0xFFFFFFFF != got:
                raise RuntimeFailure(
                    f"Bad cmsg data in cmsg {index}: expected={self.integer(want)} actual={got}"
                )
        else:  # e.g. SCM_TIMESTAMPING_OPT_STATS attribute lists: never silently accepted
            raise RuntimeFailure("Unrecognized type for cmsg_data")

    # --- control ----------------------------------------------------------------------------
    def sys_fcntl(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, cmd = self.live_fd(args[0]), self.int32(args[1])
        arg = self.int32(args[2]) if len(args) == 3 else 0
        ret, err = self.call(libc.fcntl, fd, cmd, arg)
        return ret, err, None

    def sys_ioctl(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, request = self.live_fd(args[0]), self.int32(args[1])
        out = ctypes.c_int(0)
        ret, err = self.call(libc.ioctl, fd, request, ctypes.byref(out))

        def post() -> None:
            if len(args) == 3:
                want = self.bracketed_int(args[2])
                if want != out.value:
                    raise RuntimeFailure(f"Bad ioctl optval: expected: {want} actual: {out.value}")

        return ret, err, post

    def sys_close(self, args: list[Expr]) -> tuple[int, int, Post]:
        script_fd = self.int32(args[0])
        entry = self.entry(args[0])
        ret, err = self.call(libc.close, entry.live)
        with self.state.lock:
            self.state.fds.pop(script_fd, None)
            if entry.conn is not None:
                entry.conn.live_fd = None
        return ret, err, None

    def sys_shutdown(self, args: list[Expr]) -> tuple[int, int, Post]:
        ret, err = self.call(libc.shutdown, self.live_fd(args[0]), self.int32(args[1]))
        return ret, err, None

    def optval(self, expr: Expr) -> bytes:
        if expr.kind == "list":
            return struct.pack(
                "=i",
                self.bracketed_int(expr)
                if self.bracketed_int(expr) < 2**31
                else self.bracketed_int(expr) - 2**32,
            )
        if expr.kind == "string":
            return decode_escapes(expr.value)
        if expr.kind == "inet6_addr":
            return bytes(expr.value)
        if expr.kind == "brace" and expr.field("onoff") is not None:
            return struct.pack(
                "=ii",
                self.integer(expr.field("onoff") or Expr("integer", 0)),
                self.integer(expr.field("linger") or Expr("integer", 0)),
            )
        if expr.kind in ("integer", "word", "binary"):
            return struct.pack("=i", self.integer(expr))
        raise self.type_error(expr, "list")

    def sys_setsockopt(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, level, name = self.live_fd(args[0]), self.int32(args[1]), self.int32(args[2])
        value = self.optval(args[3])
        optlen = self.int32(args[4])
        buf = self.buffer(max(len(value), optlen))
        ctypes.memmove(buf, value, len(value))
        ret, err = self.call(libc.setsockopt, fd, level, name, buf, optlen)
        return ret, err, None

    def sys_getsockopt(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd, level, name = self.live_fd(args[0]), self.int32(args[1]), self.int32(args[2])
        want_expr = args[3]
        if len(args) == 5:
            optlen = self.bracketed_int(args[4]) if args[4].kind == "list" else self.int32(args[4])
        else:
            optlen = 4
        if want_expr.kind == "list" and optlen != 4:
            raise RuntimeFailure(f"Unsupported getsockopt optlen: {optlen}")
        buf, live_len = self.buffer(max(optlen, 256)), ctypes.c_uint(optlen)
        ret, err = self.call(libc.getsockopt, fd, level, name, buf, ctypes.byref(live_len))

        def post() -> None:
            if live_len.value != optlen:
                raise RuntimeFailure(
                    f"Bad getsockopt optlen: expected: {optlen} actual: {live_len.value}"
                )
            raw = buf.raw[: live_len.value]
            if want_expr.kind == "list":
                want = self.bracketed_int(want_expr)
                got = struct.unpack("=i", raw[:4])[0]
                if want & 0xFFFFFFFF != got & 0xFFFFFFFF:
                    raise RuntimeFailure(f"Bad getsockopt optval: expected: {want} actual: {got}")
            elif want_expr.kind == "string":
                want_raw = self.optval(want_expr)
                if len(want_raw) != optlen:
                    raise RuntimeFailure(
                        f"Bad getsockopt optval: expected optlen ({optlen} "
                        f"bytes) does not match length of expected optval "
                        f"string '{want_expr.value}' ({len(want_raw)} bytes)"
                    )
                if want_raw != raw:
                    raise RuntimeFailure(
                        f"Bad getsockopt optval: expected: '{want_expr.value}'"
                        f" actual: '{raw.decode('latin-1')}'"
                    )
            elif want_expr.kind == "inet6_addr":
                if optlen != 16:
                    raise RuntimeFailure(f"Unsupported getsockopt optlen: {optlen}")
                if bytes(want_expr.value) != raw:
                    raise RuntimeFailure(
                        "Bad getsockopt optval: expected: "
                        f"{ipaddress.IPv6Address(bytes(want_expr.value))} "
                        f"actual: {ipaddress.IPv6Address(raw)} "
                    )
            else:  # upstream's wording: every other value would go unchecked
                raise RuntimeFailure(f"unsupported getsockopt value type: {type_name(want_expr)}")

        return ret, err, post

    def sys_poll(self, args: list[Expr]) -> tuple[int, int, Post]:
        if args[0].kind != "list":
            raise self.type_error(args[0], "list")
        items = args[0].items
        array = (ctypes.c_byte * (8 * max(1, len(items))))()
        for i, item in enumerate(items):
            fd_expr, ev_expr = item.field("fd"), item.field("events")
            if fd_expr is None or ev_expr is None:
                raise self.type_error(item, "pollfd")
            struct.pack_into("=ihh", array, 8 * i, self.live_fd(fd_expr), self.integer(ev_expr), 0)
        ret, err = self.call(libc.poll, array, self.int32(args[1]), self.int32(args[2]))

        def post() -> None:
            for i, item in enumerate(items):
                want_expr = item.field("revents")
                want = self.integer(want_expr) if want_expr is not None else 0
                got = struct.unpack_from("=ihh", array, 8 * i)[2] & 0xFFFF
                if want != got:
                    raise RuntimeFailure(
                        f"Expected revents of {poll_flags(want)} but got "
                        f"{poll_flags(got)} for pollfd {i}"
                    )

        return ret, err, post

    def sys_open(self, args: list[Expr]) -> tuple[int, int, Post]:
        if args[0].kind != "string":
            raise self.type_error(args[0], "string")
        ret, err = self.call(libc.open, decode_escapes(args[0].value), self.int32(args[1]), 0o644)
        return ret, err, None

    def sys_sendfile(self, args: list[Expr]) -> tuple[int, int, Post]:
        out_fd, in_fd = self.live_fd(args[0]), self.live_fd(args[1])
        offset = None
        if args[2].kind == "list":
            offset = ctypes.c_long(self.bracketed_int(args[2]))
        ret, err = self.call(
            libc.sendfile,
            out_fd,
            in_fd,
            ctypes.byref(offset) if offset is not None else None,
            self.int32(args[3]),
        )
        return ret, err, None

    # --- epoll, pipes, splice, capabilities ---------------------------------------------
    def sys_epoll_create(self, args: list[Expr]) -> tuple[int, int, Post]:
        ret, err = self.call(libc.epoll_create, self.int32(args[0]))
        return ret, err, None

    def epoll_data(self, expr: Expr) -> tuple[int, int]:
        if expr.kind != "brace" or expr.field("events") is None:
            raise self.type_error(expr, "epollev")
        events = self.integer(expr.field("events") or Expr("integer", 0))
        for key in ("fd", "ptr", "u32", "u64"):
            value = expr.field(key)
            if value is not None:
                return events, self.integer(value)
        return events, 0

    def sys_epoll_ctl(self, args: list[Expr]) -> tuple[int, int, Post]:
        epfd, op = self.live_fd(args[0]), self.int32(args[1])
        target_script = self.int32(args[2])
        target = self.live_fd(args[2])
        events, data = self.epoll_data(args[3])
        if args[3].field("fd") is not None and data != target_script:
            raise RuntimeFailure("wrong fd specified in epoll_event")
        event = struct.pack("=IQ", events & 0xFFFFFFFF, data & 0xFFFFFFFFFFFFFFFF)
        ret, err = self.call(libc.epoll_ctl, epfd, op, target, event)
        return ret, err, None

    def sys_epoll_wait(self, args: list[Expr]) -> tuple[int, int, Post]:
        epfd, maxevents = self.live_fd(args[0]), self.int32(args[2])
        want_events, want_data = self.epoll_data(args[1])
        buf = self.buffer(12 * max(1, maxevents))
        ret, err = self.call(libc.epoll_wait, epfd, buf, maxevents, self.int32(args[3]))

        def post() -> None:
            events, data = struct.unpack("=IQ", buf.raw[:12]) if ret > 0 else (0, 0)
            if events != want_events & 0xFFFFFFFF:
                raise RuntimeFailure(
                    "epoll_event->events does not match script: expected: "
                    f"0x{want_events:x} actual: 0x{events:x}\n"
                )
            if data != want_data & 0xFFFFFFFFFFFFFFFF:
                raise RuntimeFailure(
                    f"epoll_event->data does not match script: expected: {want_data} actual: {data}"
                )

        return ret, err, post

    def sys_pipe(self, args: list[Expr]) -> tuple[int, int, Post]:
        if args[0].kind != "list" or len(args[0].items) != 2:
            raise self.type_error(args[0], "list")
        fds = (ctypes.c_int * 2)()
        ret, err = self.call(libc.pipe, fds)

        def post() -> None:
            for item, live in zip(args[0].items, fds, strict=True):
                self.register(self.int32(item), live)

        return ret, err, post if ret == 0 else None

    def sys_splice(self, args: list[Expr]) -> tuple[int, int, Post]:
        fd_in, fd_out = self.live_fd(args[0]), self.live_fd(args[2])
        off_in, off_out = self.integer(args[1]), self.integer(args[3])
        ret, err = self.call(
            libc.splice,
            fd_in,
            off_in or None,
            fd_out,
            off_out or None,
            self.int32(args[4]),
            self.int32(args[5]),
        )
        return ret, err, None

    def sys_cap_set(self, args: list[Expr]) -> tuple[int, int, Post]:
        which, cap, action = self.int32(args[0]), self.int32(args[1]), self.int32(args[2])
        header = struct.pack("=Ii", 0x20080522, 0)
        data = (ctypes.c_uint32 * 6)()
        nr_capget, nr_capset = 125, 126
        ret, err = self.call(libc.syscall, nr_capget, header, data)
        if ret == 0:
            word, bit = cap // 32, 1 << (cap % 32)
            slot = word * 3 + which
            data[slot] = (data[slot] | bit) if action else (data[slot] & ~bit)
            ret, err = self.call(libc.syscall, nr_capset, header, data)
        return ret, err, None


def cmsg_data_size(want: Expr | None, level: int) -> int | None:
    """Size of the cmsg data a ``cmsg_data`` expression describes, as upstream lays it out
    (an int; three timespecs; an extended error and the offender's sockaddr), so a cmsg of
    another length fails as upstream's ``Bad len`` does. None: nothing written to size."""
    if want is None:
        return None
    if want.kind in ("integer", "word", "binary"):
        return 4
    if want.kind == "brace" and want.field("scm_sec") is not None:
        return 48
    if want.kind == "brace" and want.field("ee_errno") is not None:
        return 16 + (16 if level == socket.SOL_IP else 28)
    return None


def decode_escapes(text: str) -> bytes:
    """Decode a script string's escapes at use time (docs/packetdrill-language.md §2.4); ``\\\\``
    and ``\\"`` give themselves (upstream's form-feed quirk is deliberately fixed)."""
    out = bytearray()
    i = 0
    simple = {"n": 10, "r": 13, "t": 9, "v": 11, "f": 12, "\\": 92, '"': 34}
    while i < len(text):
        ch = text[i]
        if ch != "\\":
            out.append(ord(ch) & 0xFF)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt == "x":
            digits = text[i + 2 : i + 4]
            if len(digits) != 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise RuntimeFailure(f"invalid hex escape (\\xhh): '\\x{digits}'")
            out.append(int(digits, 16))
            i += 4
        else:
            raise RuntimeFailure(f"unsupported escape code: '{nxt}'")
    return bytes(out)
