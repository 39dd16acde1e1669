# SPDX-License-Identifier: GPL-2.0-only
"""Run configuration: the option table, its validation and the address defaults
(docs/packetdrill-language.md §8, §9).

Options come from three places applied in a fixed order (script lines, then the command line,
then ``finalize``), exactly as upstream does, because "the command line wins" is something
runners rely on.
"""

import ipaddress
import os
from dataclasses import dataclass, field, replace

from .errors import ConfigError
from .tolerance import Tolerance

# name -> "required" | "none" ; every long option upstream knows (wire/so/psp ones included so
# that they parse and can be rejected with a clear message).
OPTIONS: dict[str, str] = {
    "ip_version": "required",
    "bind_port": "required",
    "connect_port": "required",
    "local_ip": "required",
    "remote_ip": "required",
    "gateway_ip": "required",
    "netmask_ip": "required",
    "tolerance_usecs": "required",
    "tolerance_percent": "required",
    "mss": "required",
    "mtu": "required",
    "speed": "required",
    "init_scripts": "required",
    "tcp_ts_tick_usecs": "required",
    "tcp_ts_ecr_scaled": "none",
    "strict_segments": "none",
    "non_fatal": "required",
    "dry_run": "none",
    "send_omit_free": "none",
    "is_anyip": "none",
    "code_command": "required",
    "code_format": "required",
    "code_sockopt": "required",
    "define": "required",
    "verbose": "none",
    "debug": "none",
    "wire_client": "none",
    "wire_server": "none",
    "wire_server_ip": "required",
    "wire_server_at": "required",
    "wire_server_port": "required",
    "wire_client_dev": "required",
    "wire_server_dev": "required",
    "so_filename": "required",
    "so_flags": "required",
    "psp_udp_port": "required",
    # netregress extensions (never needed by scripts; used by runners):
    "tolerance_late_usecs": "required",
    "pcap": "required",
    "result_json": "required",
}

UNSUPPORTED_MODES = {
    "wire_client": "wire mode (--wire_client) is not supported by the builtin engine",
    "wire_server": "wire mode (--wire_server) is not supported by the builtin engine",
    "so_filename": "shared-object mode (--so_filename) is not supported by the builtin engine",
}

IP_VERSIONS = ("ipv4", "ipv4-mapped-ipv6", "ipv6")


@dataclass
class Config:
    """Everything one script run needs to know besides the script itself."""

    ip_version: str = "ipv4"
    bind_port: int = 8080
    connect_port: int = 8080
    local_ip: str = ""
    remote_ip: str = ""
    remote_prefix: int | None = None
    gateway_ip: str = ""
    netmask_ip: str = "255.255.0.0"
    tolerance: Tolerance = field(default_factory=Tolerance)
    mss: int = 0
    mtu: int = 1500
    speed: int | None = None
    init_scripts: list[str] = field(default_factory=list)
    tcp_ts_tick_usecs: int = 0
    tcp_ts_ecr_scaled: bool = False
    strict_segments: bool = False
    non_fatal_packet: bool = False
    dry_run: bool = False
    send_omit_free: bool = False
    is_anyip: bool = False
    code_command: str = "python3"
    code_format: str = "python"
    code_sockopt: str = ""
    defines: dict[str, str] = field(default_factory=dict)
    verbose: bool = False
    debug: bool = False
    pcap: str = ""
    result_json: str = ""
    unsupported: str = ""

    @property
    def wire_v6(self) -> bool:
        """True when packets on the wire are IPv6 (only the ``ipv6`` variant)."""
        return self.ip_version == "ipv6"

    @property
    def socket_v6(self) -> bool:
        """True when sockets are AF_INET6 (``ipv6`` and ``ipv4-mapped-ipv6``)."""
        return self.ip_version != "ipv4"


def _int(value: str, name: str, where: str, low: int, high: int) -> int:
    try:
        number = int(value, 10)
    except ValueError:
        raise ConfigError(f"{where}: bad --{name}: {value}") from None
    if not low <= number <= high:
        raise ConfigError(f"{where}: bad --{name}: {value}")
    return number


def _float(value: str, name: str, where: str, low: float, high: float) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{where}: bad --{name}: {value}") from None
    if not low <= number <= high:
        raise ConfigError(f"{where}: bad --{name}: {value}")
    return number


def apply_option(cfg: Config, name: str, value: str | None, where: str) -> None:
    """Apply one ``--name[=value]``; ``where`` is ``Command Line`` or the script path."""
    kind = OPTIONS.get(name)
    if kind is None:
        raise ConfigError(f"{where}: option '{name}' unknown")
    if kind == "required" and value is None:
        raise ConfigError(f"{where}: option '{name}' requires an argument")
    if kind == "none" and value is not None:
        raise ConfigError(f"{where}: option '{name}' forbids an argument")
    if kind == "none":
        _apply_flag(cfg, name)
        return
    assert value is not None
    _apply_valued(cfg, name, value, where)


def _origin(where: str) -> str:
    return "command line" if where == "Command Line" else "script"


def _apply_flag(cfg: Config, name: str) -> None:
    if name in UNSUPPORTED_MODES:
        cfg.unsupported = UNSUPPORTED_MODES[name]
    elif name in (
        "tcp_ts_ecr_scaled",
        "strict_segments",
        "dry_run",
        "send_omit_free",
        "is_anyip",
        "verbose",
        "debug",
    ):
        setattr(cfg, name, True)


def _apply_valued(cfg: Config, name: str, value: str, where: str) -> None:
    if name == "ip_version":
        if value not in IP_VERSIONS:
            raise ConfigError(f"{where}: bad --ip_version: {value}")
        cfg.ip_version = value
    elif name in ("bind_port", "connect_port"):
        setattr(cfg, name, _int(value, name, where, 1, 65535))
    elif name in ("local_ip", "gateway_ip", "netmask_ip"):
        setattr(cfg, name, value)
    elif name == "remote_ip":
        address, _, prefix = value.partition("/")
        cfg.remote_ip = address
        cfg.remote_prefix = _int(prefix, name, where, 0, 128) if prefix else None
    elif name == "tolerance_usecs":
        cfg.tolerance = replace(
            cfg.tolerance, usecs=_int(value, name, where, 1, 2**31 - 1), base_from=_origin(where)
        )
    elif name == "tolerance_percent":
        cfg.tolerance = replace(
            cfg.tolerance, percent=_float(value, name, where, 0.0, 100.0), base_from=_origin(where)
        )
    elif name == "tolerance_late_usecs":
        cfg.tolerance = cfg.tolerance.with_slack(
            _int(value, name, where, 0, 60_000_000), _origin(where)
        )
    elif name == "mss":
        cfg.mss = _int(value, name, where, 1, 65535)
    elif name == "mtu":
        cfg.mtu = _int(value, name, where, 0, 65535)
    elif name == "speed":
        cfg.speed = _int(value, name, where, 0, 2**32 - 1)
    elif name == "init_scripts":
        cfg.init_scripts = [piece for piece in value.split(",") if piece]
    elif name == "tcp_ts_tick_usecs":
        cfg.tcp_ts_tick_usecs = _int(value, name, where, 0, 1000000)
    elif name == "non_fatal":
        kinds = value.split(",")
        if any(kind not in ("packet", "syscall") for kind in kinds):
            raise ConfigError(f"{where}: bad --non_fatal: {value}")
        cfg.non_fatal_packet = "packet" in kinds
    elif name == "define":
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ConfigError(f"bad definition: {value}")
        cfg.defines[key] = val
    elif name in ("code_command", "code_format", "code_sockopt", "pcap", "result_json"):
        if name == "code_format" and value != "python":
            raise ConfigError(f"{where}: bad --code_format: {value}")
        if name == "code_sockopt" and value not in ("TCP_INFO", "TCP_CC_INFO", "SO_MEMINFO"):
            raise ConfigError(f"{where}: bad --code_sockopt: {value}")
        setattr(cfg, name, value)
    elif name == "so_filename":
        cfg.unsupported = UNSUPPORTED_MODES[name]
    # The remaining wire/psp options only matter in modes we reject; accept and ignore them.


def _random_host(bits: int) -> int:
    return int.from_bytes(os.urandom(4), "big") & ((1 << bits) - 1)


def _check_family(address: str, v6: bool) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        parsed = None
    if parsed is None or (parsed.version == 6) != v6:
        raise ConfigError(f"bad IPv{6 if v6 else 4} address: {address}")
    return str(parsed)


def finalize(cfg: Config) -> None:
    """Fill in address defaults for the chosen IP version and validate what was given."""
    v6 = cfg.wire_v6
    if v6:
        if not cfg.local_ip:
            host = _random_host(32) or 1
            cfg.local_ip = str(
                ipaddress.IPv6Address(int(ipaddress.IPv6Address("fd3d:fa7b:d17d::")) + host)
            )
        cfg.gateway_ip = cfg.gateway_ip or "fd3d:fa7b:d17d:8888::"
        if not cfg.remote_ip:
            cfg.remote_ip, cfg.remote_prefix = "2001:db8::1", 32
    else:
        if not cfg.local_ip:
            host = 0
            while host in (0, 1, 0xFFFF):
                host = _random_host(16)
            cfg.local_ip = f"192.168.{host >> 8}.{host & 0xFF}"
        cfg.gateway_ip = cfg.gateway_ip or "192.168.0.1"
        if not cfg.remote_ip:
            cfg.remote_ip, cfg.remote_prefix = "192.0.2.1", 24
        _check_family(cfg.netmask_ip, False)
    cfg.local_ip = _check_family(cfg.local_ip, v6)
    cfg.remote_ip = _check_family(cfg.remote_ip, v6)
    cfg.gateway_ip = _check_family(cfg.gateway_ip, v6)
    if cfg.remote_prefix is None:
        cfg.remote_prefix = 128 if v6 else 32

    if cfg.remote_prefix > (128 if v6 else 32):
        raise ConfigError(f"Command Line: bad --remote_ip: {cfg.remote_ip}/{cfg.remote_prefix}")


def local_prefix_len(cfg: Config) -> int:
    """Prefix length of the local address on tun0 (/48 for IPv6, from the netmask for IPv4)."""
    if cfg.wire_v6:
        return 48
    return ipaddress.IPv4Network(f"0.0.0.0/{cfg.netmask_ip}").prefixlen


def remote_network(cfg: Config) -> str:
    """The route to the remote side, e.g. ``192.0.2.0/24``."""
    return str(ipaddress.ip_network(f"{cfg.remote_ip}/{cfg.remote_prefix}", strict=False))


def socket_address(cfg: Config, address: str) -> str:
    """How a wire address looks to a socket: ``::ffff:a.b.c.d`` in the mapped variant."""
    return f"::ffff:{address}" if cfg.ip_version == "ipv4-mapped-ipv6" else address
