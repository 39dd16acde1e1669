# SPDX-License-Identifier: GPL-2.0-only
"""Interface requests by ioctl (``struct ifreq``): a link's index, and its up/down flag.

Why ioctls next to pyroute2: these two are single system calls, answered in the namespace
of the socket they are issued on, with no message to build or decode. Through pyroute2 each
is a netlink round trip, dear in an emulated guest, and every topology needs dozens of them
(each knob of a link needs its index; every link, ``lo`` of every namespace included, is
brought up). The kernel does the same either way: ``SIOCSIFFLAGS`` and ``RTM_NEWLINK``
with IFF_UP both end in ``dev_change_flags()``. Everything else stays with pyroute2.
"""

import errno
import fcntl
import os
import struct

IFF_UP = 0x1
IFF_RUNNING = 0x40
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _SIOCGIFINDEX = 0x8913, 0x8914, 0x8933
_IFNAMSIZ = 16
# struct ifreq: the name, then a 24-byte union (an int index, or short flags first).
_INDEX = struct.Struct(f"{_IFNAMSIZ}si20x")
_FLAGS = struct.Struct(f"{_IFNAMSIZ}sH22x")


def _name(name: str) -> bytes:
    """The name as the kernel takes it; a name no link can have is "no such device" (the
    struct would silently truncate it to another, possibly existing, name)."""
    raw = name.encode()
    if not raw or len(raw) >= _IFNAMSIZ:
        raise OSError(errno.ENODEV, os.strerror(errno.ENODEV), name)
    return raw


def index(fd: int, name: str) -> int:
    """The index of link *name* in the namespace of socket *fd* (OSError ENODEV if none)."""
    found: int = _INDEX.unpack(fcntl.ioctl(fd, _SIOCGIFINDEX, _INDEX.pack(_name(name), 0)))[1]
    return found


def set_flags(fd: int, name: str, on: int = 0, off: int = 0) -> None:
    """Turn flags *on* and *off* for link *name* in the namespace of socket *fd*."""
    raw = _name(name)
    flags: int = _FLAGS.unpack(fcntl.ioctl(fd, _SIOCGIFFLAGS, _FLAGS.pack(raw, 0)))[1]
    fcntl.ioctl(fd, _SIOCSIFFLAGS, _FLAGS.pack(raw, (flags | on) & ~off & 0xFFFF))
