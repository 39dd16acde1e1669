# SPDX-License-Identifier: GPL-2.0-only
"""Topologies: validation, feature checks before building, and each shipped shape working."""

import json

import pytest

from netns import FeatureMissing, features
from netns.topology import Bridge, Iface, Topology, Veth, build, shapes


def test_unknown_host_rejected_before_building() -> None:
    topo = Topology(
        "bad", hosts={"a": {}}, links=(Veth(Iface("a", "eth0"), Iface("ghost", "eth0")),)
    )
    with pytest.raises(ValueError, match="unknown host.*ghost"):
        build(topo)


def test_features_listed_in_first_use_order() -> None:
    assert shapes.flannel_vxlan().features() == ["veth", "bridge", "vxlan"]
    assert "ipip" in shapes.ipip_multihomed().features()


@pytest.mark.skipif(features.has("ipip"), reason="kernel has ipip: nothing to refuse")
def test_missing_feature_refused_with_kernel_reason() -> None:
    with pytest.raises(FeatureMissing, match="kernel lacks ipip"):
        build(shapes.ipip_multihomed())


def test_bridged_hosts_reach_each_other(topology) -> None:
    net = topology(shapes.bridged(4))
    for i in (2, 3, 4):
        net["h1"].run(["ping", "-c", "1", "-W", "2", f"10.0.1.{i}"])


def test_flannel_vxlan_pods_reach_each_other(topology) -> None:
    net = topology(shapes.flannel_vxlan())
    net["pod3"].run(["ping", "-c", "1", "-W", "2", shapes.pod_ip(4)])
    assert net["h3"].link("flannel.1").mtu == shapes.FLANNEL_MTU


def test_ipip_multihomed_builds_and_routes(topology) -> None:
    net = topology(shapes.ipip_multihomed())  # skips here: the host kernel lacks ipip
    net["n2"].run(["ping", "-c", "1", "-W", "2", shapes.N4_PRIMARY])
    net["n2"].run(["ping", "-c", "1", "-W", "2", shapes.N4_REGISTERED])


def test_teardown_removes_every_namespace() -> None:
    net = build(shapes.bridged(2))
    paths = [ns.path for ns in net.hosts.values()]
    net.close()
    assert not any(__import__("os").path.exists(p) for p in paths)


@pytest.mark.parametrize("make", [shapes.pair, lambda: shapes.bridged(3), shapes.flannel_vxlan])
def test_built_links_are_as_declared(topology, make) -> None:
    """What ``ip`` shows inside each namespace matches the declaration: MTU, MAC, addresses,
    up, and bridge ports enslaved and up (the builder sends fewer requests than knobs)."""
    topo = make()
    net = topology(topo)
    for spec in topo.links:
        for iface in spec.ifaces:
            [shown] = json.loads(
                net[iface.host].run(["ip", "-j", "addr", "show", "dev", iface.name]).stdout
            )
            where = f"{iface.host}/{iface.name}"
            assert ("UP" in shown["flags"]) == iface.up, where
            if iface.mtu:
                assert shown["mtu"] == iface.mtu, where
            if iface.mac:
                assert shown["address"] == iface.mac, where
            addrs = {f"{a['local']}/{a['prefixlen']}" for a in shown["addr_info"]}
            assert set(iface.addrs) <= addrs, where
        if isinstance(spec, Bridge):
            host = net[spec.iface.host]
            for port in spec.ports:
                [shown] = json.loads(host.run(["ip", "-j", "link", "show", "dev", port]).stdout)
                assert shown.get("master") == spec.iface.name and "UP" in shown["flags"], port
