# SPDX-License-Identifier: GPL-2.0-only
"""Tests that only mean something inside a kernel-matrix guest (scripts/matrix, pytest --kernel).

They prove the VM plumbing end to end: the guest really runs the requested kernel, its modules
load on demand, and a tunnel the host kernel lacks works there in a fresh namespace. On a plain
host run they skip: the environment the matrix sets is absent.
"""

import os
import subprocess
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    "NETREGRESS_KERNEL_RELEASE" not in os.environ,
    reason="runs under the kernel matrix only (scripts/matrix, pytest --kernel)",
)


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def test_runs_the_requested_kernel() -> None:
    assert os.uname().release == os.environ["NETREGRESS_KERNEL_RELEASE"]


def _link_in_fresh_namespace(module: str, *link: str) -> str:
    """Create a link in a new namespace, return `ip -d link show` of it (skip without module)."""
    if subprocess.run(["modprobe", "-n", module], capture_output=True).returncode != 0:
        pytest.skip(f"kernel {os.uname().release} has no {module} module")
    ns = f"nrk{os.getpid()}-{uuid.uuid4().hex[:6]}"
    assert _ip("netns", "add", ns).returncode == 0
    try:
        made = _ip("-n", ns, "link", "add", "name", "t", *link)
        assert made.returncode == 0, made.stderr
        return _ip("-n", ns, "-d", "link", "show", "t").stdout
    finally:
        _ip("netns", "del", ns)


def test_ipip_tunnel_in_fresh_namespace() -> None:
    shown = _link_in_fresh_namespace(
        "ipip", "type", "ipip", "local", "192.0.2.1", "remote", "192.0.2.2"
    )
    assert "ipip" in shown and "remote 192.0.2.2" in shown


def test_modules_autoload_on_demand() -> None:
    """vrf is not preloaded: the kernel's request_module must reach the guest's modprobe."""
    shown = _link_in_fresh_namespace("vrf", "type", "vrf", "table", "10")
    assert "vrf table 10" in shown


def test_tcp_plb_sysctl() -> None:
    """A real difference between kernels (6.2+), declared in kernels/expectations.toml."""
    assert Path("/proc/sys/net/ipv4/tcp_plb_enabled").exists()


def test_identity_files_are_the_guests_own_copy() -> None:
    """The guest reads the host root live; /etc/passwd and /etc/group are copied into the
    guest's own layer at boot, so a useradd on the host mid-run (which rewrites them) cannot
    make tcpdump's user lookup fail. A file the guest writes shows which device its own layer
    reports; a file only the host has, the host layer's."""
    probe = Path("/etc/.netregress-layer-probe")
    probe.write_text("guest layer\n")
    try:
        own = probe.stat().st_dev
    finally:
        probe.unlink()
    host = Path("/usr/bin/env").stat().st_dev
    if own == host:
        pytest.skip("this kernel's overlay reports one device for both layers (xino)")
    assert {name: Path("/etc", name).stat().st_dev for name in ("passwd", "group")} == {
        "passwd": own,
        "group": own,
    }
