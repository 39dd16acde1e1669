"""Namespace: unique names, isolation, commands, background processes, sysctls."""

import os

import pytest

from netns import CmdError, Namespace
from netregress import naming


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
