# SPDX-License-Identifier: GPL-2.0-only
"""C10/C11 · Firewalls on the flannel path: FORWARD policy DROP, and REJECT admin-prohibited.

C10 field story (report 003, lines 6372–6405): "Starting from Docker 1.13 default iptables
policy for FORWARDING is DROP". flannel.1 on the receiving node gets the packets, cni0
never does; ``iptables -P FORWARD ACCEPT`` fixes it (flannel later learned to do that
itself: "Changing default FORWARD chain policy to ACCEPT"). Mechanism: cross-node pod
traffic is *routed* from flannel.1 to cni0, so it always traverses FORWARD. Traffic bridged
inside one bridge only meets iptables when br_netfilter is active and
``net.bridge.bridge-nf-call-iptables=1`` (per namespace since 5.3).

Oracles (asserted): with policy DROP on the receiving node the ping fails, a capture on
its flannel.1 shows the decapsulated echo request while one on cni0 shows nothing; with
ACCEPT (the fix, the asserted oracle) both captures see it and ping works.
br_netfilter: with bridge-nf-call-iptables=1 a FORWARD DROP policy in the bridge's namespace
blocks bridged pod-to-pod traffic; with 0 the same rules are bypassed.

C11 field story (003, 6349–6370): pinging another node's overlay IP fails; the peer's
capture shows "icmp unreachable - admin prohibited"; firewalld had wiped docker's chains.
Mechanism: a reject with ``admin-prohibited`` (iptables' REJECT target and nftables'
``reject``, which firewalld's nftables backend uses, share nf_reject_ipv4) selects ICMP
type 3 code 13.
Oracle: the sender receives type 3 code 13 from the peer and counts IcmpInDestUnreachs.

Every rule lives in a test namespace. Broken variants (strict xfail, the same oracle): C10
with policy DROP, and with bridge-nf-call-iptables=1; C11 with a firewall that rejects with
host-unreachable instead, which the admin-prohibited oracle must tell apart.
"""

import re
from collections.abc import Callable

import pytest
from scapy.layers.inet import ICMP, IP

from netns import Namespace, cmd
from netns.features import in_netregress_vm
from netns.topology import shapes
from netns.traffic import ping
from netns.variants import broken

pytestmark = [pytest.mark.netfilter]


def _forward_policy(ns: Namespace) -> tuple[str, int]:
    """FORWARD's policy in *ns* and the packets it has decided so far."""
    head = ns.run(["iptables", "-w", "-L", "FORWARD", "-v", "-n", "-x"]).stdout.splitlines()[0]
    match = re.search(r"policy (\w+) (\d+) packets", head)
    assert match, f"unexpected iptables header: {head!r}"
    return match[1], int(match[2])


def _forward_policy_packets(ns: Namespace) -> int:
    return _forward_policy(ns)[1]


def _policy_dropped(ns: Namespace) -> Callable[[], bool]:
    """A one-request ping's *hopeless*: FORWARD's DROP policy in *ns* took a packet (the ping
    is the only traffic there), so its request is gone and no reply can come."""
    before = _forward_policy_packets(ns)

    def dropped() -> bool:
        policy, packets = _forward_policy(ns)
        return policy == "DROP" and packets > before

    return dropped


@pytest.mark.needs("iptables")
@pytest.mark.parametrize(
    "policy",
    [
        "ACCEPT",
        broken("DROP", id="DROP", why="Docker's FORWARD policy DROP stops routed pod traffic"),
    ],
)
def test_c10_forward_policy_between_flannel_and_cni0(topology, policy: str) -> None:
    net = topology(shapes.flannel_vxlan())
    h4 = net["h4"]
    h4.run(["iptables", "-w", "-P", "FORWARD", policy])
    dropped = _policy_dropped(h4)
    echo = "icmp[icmptype] = icmp-echo"
    with h4.capture("flannel.1", echo) as on_vxlan, h4.capture("cni0", echo) as on_bridge:
        reached = ping(net["pod3"], shapes.pod_ip(4), count=1, wait=1, hopeless=dropped)
    assert len(on_vxlan.packets) == 1  # decapsulated on the receiving node in both cases
    assert reached
    assert len(on_bridge.packets) == 1


def _load_in_guest(module: str) -> None:
    """Load *module* up front inside a matrix VM guest (a throw-away machine), where the
    kernel's own module autoloading is not reliable; never on a host."""
    if in_netregress_vm():
        cmd(["modprobe", module], check=False)


def _bridge_netfilter(ns: Namespace) -> None:
    """Skip unless bridge-nf sysctls exist in *ns* (br_netfilter built in or loaded)."""
    _load_in_guest("br_netfilter")
    if not ns.run(["test", "-d", "/proc/sys/net/bridge"], check=False).ok:
        pytest.skip(
            "br_netfilter is not loaded (no /proc/sys/net/bridge in the namespace); "
            "netregress loads kernel modules only inside matrix VM guests"
        )


@pytest.mark.bridge
@pytest.mark.needs("iptables")
@pytest.mark.parametrize(
    "call_iptables",
    [
        0,
        broken(1, id="call-iptables", why="bridged frames then traverse FORWARD, policy DROP"),
    ],
)
def test_c10_br_netfilter_sends_bridged_traffic_through_forward(
    topology, call_iptables: int
) -> None:
    net = topology(shapes.bridged(2))
    sw = net["sw"]
    _bridge_netfilter(sw)
    sw.set_sysctls({"net.bridge.bridge-nf-call-iptables": call_iptables})
    sw.run(["iptables", "-w", "-P", "FORWARD", "DROP"])
    before = _forward_policy_packets(sw)
    reached = ping(net["h1"], "10.0.1.2", count=1, wait=1, hopeless=_policy_dropped(sw))
    assert reached
    assert _forward_policy_packets(sw) == before


# firewalld's nftables backend rejects with admin-prohibited; native nft needs no xt
# compatibility modules (a fresh VM guest has no ip_tables/ipt_REJECT loaded).
FIREWALLD_LIKE_REJECT = """
table inet c11 {{
    chain input {{
        type filter hook input priority 0;
        icmp type echo-request reject with icmp type {icmp_type}
    }}
}}
"""


@pytest.mark.needs("nftables")
@pytest.mark.parametrize(
    "icmp_type",
    [
        "admin-prohibited",
        broken(
            "host-unreachable",
            id="host-unreachable",
            why="a reject with another ICMP code is not firewalld's signature",
        ),
    ],
)
def test_c11_reject_admin_prohibited_reaches_the_sender(topology, icmp_type: str) -> None:
    net = topology(shapes.flannel_vxlan())
    h3, h4 = net["h3"], net["h4"]
    # h4's overlay gateway (cni0). Not its flannel.1 x.x.x.0: before 5.14 that is the
    # broadcast address of cni0's subnet on h4, so pings to it go unanswered (see C08).
    target = "172.19.4.1"
    _load_in_guest("nft_reject_inet")
    h4.run(["nft", "-f", "-"], input=FIREWALLD_LIKE_REJECT.format(icmp_type=icmp_type))
    with h3.nstat() as delta, h3.capture("flannel.1", "icmp") as cap:
        replied = ping(h3, target, count=1, wait=2)
    errors = [(p[IP].src, p[ICMP].type, p[ICMP].code) for p in cap.packets if p[ICMP].type == 3]
    assert not replied
    assert errors == [(target, 3, 13)]
    assert delta["IcmpInDestUnreachs"] >= 1
