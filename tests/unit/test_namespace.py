# SPDX-License-Identifier: GPL-2.0-only
"""Namespace: unique names, isolation, commands, background processes, sysctls."""

import errno
import os
import subprocess

import pytest
from pyroute2.netlink.exceptions import NetlinkError

from netns import CmdError, Link, Namespace, namespace
from netregress import naming
from netregress.netns_entry import NETNS_DIR, in_netns


def test_names_are_unique_and_owned_by_this_process(ns_factory) -> None:
    a, b = ns_factory("x"), ns_factory("x")
    assert a.name != b.name
    owner = naming.owner_of(a.name)
    assert owner is not None and owner.pid == os.getpid() and owner.alive()


def test_fresh_namespace_has_only_lo_up(ns: Namespace) -> None:
    assert ns.links() == ["lo"]
    assert ns.link("lo").is_up
    assert "127.0.0.1" in ns.run(["ip", "-4", "addr", "show", "lo"]).stdout


def test_run_raises_with_namespace_in_message(ns: Namespace) -> None:
    with pytest.raises(CmdError, match=ns.name):
        ns.run(["ip", "link", "show", "nosuchdev"])


def test_background_process_stopped_on_close() -> None:
    ns = Namespace("bg")
    proc = ns.spawn(["sleep", "60"])
    assert proc.running()
    ns.close()
    assert not proc.running()
    assert not os.path.exists(ns.path)


def test_sysctl_set_and_restore(ns: Namespace) -> None:
    original = ns.sysctl("net.ipv4.tcp_autocorking")
    flipped = "0" if original == "1" else "1"
    ns.set_sysctls({"net.ipv4.tcp_autocorking": flipped})
    assert ns.sysctl("net.ipv4.tcp_autocorking") == flipped
    ns.restore_sysctls()
    assert ns.sysctl("net.ipv4.tcp_autocorking") == original


def test_close_is_idempotent() -> None:
    ns = Namespace("twice")
    ns.close()
    ns.close()


def test_sysctls_are_the_namespaces_own(ns: Namespace) -> None:
    """In-process access (netns/sysctls.py) must act on the namespace, not on the root one:
    the sysctl tool run inside agrees, and the root namespace's value never moves."""
    key, path = "net.ipv4.ip_forward", "/proc/sys/net/ipv4/ip_forward"
    with open(path) as root:
        root_value = root.read().strip()
    flipped = "0" if ns.sysctl(key) == "1" else "1"
    ns.set_sysctls({key: flipped})
    assert ns.run(["sysctl", "-n", key]).stdout.strip() == flipped
    with open(path) as root:
        assert root.read().strip() == root_value


def test_unknown_sysctl_is_a_command_error(ns: Namespace) -> None:
    with pytest.raises(CmdError, match="net.ipv4.no_such_knob"):
        ns.sysctl("net.ipv4.no_such_knob")
    with pytest.raises(CmdError, match=ns.name):
        ns.set_sysctls({"net.ipv4.no_such_knob": 1})


def _netns_of_this_thread() -> str:
    return os.readlink("/proc/thread-self/ns/net")


def test_creating_a_namespace_leaves_the_callers_namespace_alone(ns_factory) -> None:
    """Namespaces are made by a short-lived thread (netns_entry.in_new_netns): the calling thread
    stays where it was, and the new namespace is a different one."""
    before = _netns_of_this_thread()
    made = ns_factory("where")
    assert _netns_of_this_thread() == before
    assert os.stat(made.path).st_ino != os.stat("/proc/thread-self/ns/net").st_ino


def test_tun_made_through_pyroute2_lands_in_the_namespace(ns: Namespace) -> None:
    """pyroute2 makes tun devices itself (not the kernel's netlink): the device must still
    appear in the namespace and never in the root namespace."""
    name = f"tn{os.getpid() % 100000}"
    try:
        ns.add_tun(name)
        assert name in ns.links()
    finally:
        misplaced = subprocess.run(["ip", "link", "show", name], capture_output=True)
        if misplaced.returncode == 0:  # put the root namespace back before failing
            subprocess.run(["ip", "link", "del", name], check=True)
    assert misplaced.returncode != 0, f"{name} was made in the root namespace"


def test_link_index_is_the_namespaces_own(ns_factory) -> None:
    """Link.index asks the kernel through the namespace's own socket: it agrees with
    ``ip link`` run inside, for a name the root namespace does not have."""
    a, b = ns_factory("ia"), ns_factory("ib")
    name = f"ix{os.getpid() % 100000}"
    a.add_veth(name, b, "peer0")
    for host, ifname in ((a, name), (b, "peer0")):
        shown = host.run(["ip", "-o", "link", "show", ifname]).stdout
        assert host.link(ifname).index == int(shown.split(":")[0])
    assert subprocess.run(["ip", "link", "show", name], capture_output=True).returncode != 0


@pytest.mark.parametrize("name", ["nosuch0", "", "x" * 16])
def test_missing_link_index_is_a_lookup_error(ns: Namespace, name: str) -> None:
    with pytest.raises(LookupError, match=ns.name):
        _ = ns.link(name).index


def test_up_and_down_act_on_the_namespaces_own_link(ns_factory) -> None:
    """Link.up()/down() go by ioctl on the namespace's socket (netregress.ifreq): ``ip link``
    inside sees the flag change, on the right end of the pair only, and the root namespace
    has no such link."""
    a, b = ns_factory("ua"), ns_factory("ub")
    name = f"up{os.getpid() % 100000}"
    a.add_veth(name, b, "peer0")

    def admin_up(host: Namespace, ifname: str) -> bool:
        flags = host.run(["ip", "-o", "link", "show", ifname]).stdout.split("<")[1]
        return "UP" in flags.split(">")[0].split(",")

    a.link(name).up()
    assert admin_up(a, name) and not admin_up(b, "peer0")
    b.link("peer0").up()
    a.link(name).down()
    assert not admin_up(a, name) and admin_up(b, "peer0")
    assert subprocess.run(["ip", "link", "show", name], capture_output=True).returncode != 0


@pytest.mark.parametrize("name", ["nosuch0", "", "x" * 16])
def test_up_of_a_missing_link_is_a_lookup_error(ns: Namespace, name: str) -> None:
    with pytest.raises(LookupError, match=ns.name):
        ns.link(name).up()


def test_kernel_refusal_surfaces_as_netlink_error_with_errno(veth_pair) -> None:
    """Cases assert the kernel's errno: a knob the kernel refuses must not be masked."""
    with pytest.raises(NetlinkError) as refused:
        veth_pair["a"].link("eth0").set_mtu(1 << 20)
    assert refused.value.code == errno.EINVAL


def test_commands_run_inside_without_ip_netns_exec(ns: Namespace) -> None:
    """run() enters the namespace from a thread of ours: the tool sees the namespace's links
    and /proc/net, while the report still reads as the ip netns exec command."""
    result = ns.run(["cat", "/proc/net/dev"])
    assert [line.split(":")[0].strip() for line in result.stdout.splitlines()[2:]] == ["lo"]
    assert result.argv[:4] == ["ip", "netns", "exec", ns.name]
    assert ns.run(["cat"], input="piped\r\n").stdout == "piped\n"  # as text=True gave it


@pytest.mark.parametrize("how", ["run", "spawn"])
def test_sys_shows_the_namespaces_devices(ns: Namespace, how: str) -> None:
    """/sys shows the devices of whoever mounted it, so commands naming /sys, and background
    processes, get a /sys of their own, as under ip netns exec; a bare setns would list the
    initial namespace's devices."""
    argv = ["ls", "/sys/class/net"]
    if how == "run":
        out = ns.run(argv).stdout
    else:
        proc = ns.spawn(argv, stdout=subprocess.PIPE)
        out = proc.communicate(timeout=10)[0].decode()
    assert out.split() == ["lo"]
    root_devices = sorted(os.listdir("/sys/class/net"))
    if root_devices != ["lo"]:  # the broken variant shows only where the root has more
        bare = in_netns(ns.name, lambda: subprocess.run(argv, capture_output=True, text=True))
        assert bare.stdout.split() == root_devices


def test_run_times_out_and_kills_the_command(ns: Namespace) -> None:
    with pytest.raises(CmdError, match="timed out"):
        ns.run(["sleep", "30"], timeout=0.5)


def test_a_closed_namespace_is_named_when_entered(ns_factory) -> None:
    gone = ns_factory("gone")
    gone.close()
    with pytest.raises(FileNotFoundError, match=f"network namespace {gone.name} does not exist"):
        gone.run(["true"])


def _our_bound_namespaces() -> set[str]:
    return {name for name in os.listdir(NETNS_DIR) if name.startswith(naming.run_id() + "-")}


@pytest.mark.parametrize("step", ["route socket", "lo up"])
def test_a_namespace_that_fails_to_set_up_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Whichever step of the creation fails, the namespace is unbound again and the error is
    the step's own."""

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError(step)

    before = _our_bound_namespaces()
    target = (namespace, "IPRoute") if step == "route socket" else (Link, "up")
    monkeypatch.setattr(*target, fail)
    with pytest.raises(RuntimeError, match=step):
        Namespace("fails")
    assert _our_bound_namespaces() == before
