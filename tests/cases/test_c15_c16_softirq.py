"""C15/C16 · Where and how much RX softirq work runs: RPS on a veth, and netdev_budget.

Field story (report 004, lines 35–62 and 198–212; 003, 445–465): nginx throughput depended
on which core ran the receive softirqs; "try not to let packets overflow
net.core.netdev_budget: after an overflow ksoftirqd takes over, which is less efficient",
and si% on a core includes work that ksoftirqd merely triggers.

Mechanism: a veth has no NAPI of its own; its receive side is ``netif_rx`` onto the per-CPU
backlog of the CPU that *sent* the packet, processed by that CPU's NET_RX softirq — unless
RPS (``/sys/class/net/<dev>/queues/rx-0/rps_cpus``, per device, so settable inside a test
namespace) steers it to another CPU's backlog with an IPI. ``net_rx_action`` stops when it
has spent ``net.core.netdev_budget`` packets (or 2 jiffies) with work left and counts a
``time_squeeze`` (column 3 of /proc/net/softnet_stat) before leaving the rest to a later
softirq or ksoftirqd.

Oracles (threshold, bounded: a fixed count of small UDP datagrams from a sender pinned to
CPU 0; the counters are machine-global, so other traffic can only add to them):
- C16: with ``rps_cpus`` = CPU 1 on the receiving veth, CPU 1 processes at least every
  datagram sent and takes RPS IPIs and NET_RX softirqs; the broken variant (RPS off)
  asserts the opposite placement: the sender's CPU 0 processes them.
- C15 (VM only: netdev_budget is global): with budget 1 every NET_RX round that does work
  squeezes, so time_squeeze grows by at least count/64 (64 = backlog weight); at the
  default budget it stays below that (the broken variant). Both variants raise
  ``netdev_budget_usecs`` so that the time limit (a jiffy tick in a slow VM) cannot squeeze.
"""

import os

import pytest

from netns.features import in_netregress_vm
from netns.softnet import (GUEST_ONLY, PROCESSED, RECEIVED_RPS, TIME_SQUEEZE, GlobalSysctls,
                           Snapshot)
from netns.topology import Network
from netns.traffic import udp_burst

COUNT = 3000
SENDER_CPU, RPS_CPU = 0, 1
BACKLOG_WEIGHT = 64

needs_two_cpus = pytest.mark.skipif((os.cpu_count() or 1) < 2,
                                    reason="RPS placement needs at least 2 CPUs")


def _burst(net: Network) -> Snapshot:
    before = Snapshot.take()
    sent = udp_burst(net["a"], "10.0.0.2", count=COUNT, cpu=SENDER_CPU)
    assert sent == COUNT
    return Snapshot.take() - before


@needs_two_cpus
@pytest.mark.parametrize("rps", ["rps_to_cpu1", "no_rps"])
def test_c16_rps_moves_veth_rx_softirq_to_the_chosen_cpu(veth_pair: Network, rps: str
                                                         ) -> None:
    mask = f"{1 << RPS_CPU:x}" if rps == "rps_to_cpu1" else "0"
    queue = "/sys/class/net/eth0/queues/rx-0/rps_cpus"
    # `ip netns exec` remounts /sys, so this is the test namespace's own eth0.
    veth_pair["b"].run(["sh", "-c", f"echo {mask} > {queue}"])
    assert int(veth_pair["b"].run(["cat", queue]).stdout.strip().replace(",", ""), 16) == \
        int(mask, 16)
    delta = _burst(veth_pair)
    processed = delta.column(PROCESSED)
    report = f"processed per CPU {processed}, NET_RX per CPU {delta.net_rx}"
    if rps == "rps_to_cpu1":
        assert processed[RPS_CPU] >= COUNT, report
        assert delta.column(RECEIVED_RPS)[RPS_CPU] > 0, report
        assert delta.net_rx[RPS_CPU] > 0, report
    else:
        assert processed[SENDER_CPU] >= COUNT, report


@pytest.mark.skipif(not in_netregress_vm(),
                    reason=GUEST_ONLY.format(knob="net.core.netdev_budget(_usecs)"))
@pytest.mark.parametrize("budget", [1, "default"])
def test_c15_tiny_netdev_budget_raises_time_squeeze(veth_pair: Network, budget) -> None:
    # A generous time budget in both variants, so only the packet budget can squeeze.
    knobs: dict[str, int | str] = {"net.core.netdev_budget_usecs": 1_000_000}
    if budget != "default":
        knobs["net.core.netdev_budget"] = budget
    with GlobalSysctls(knobs):
        squeezed = sum(_burst(veth_pair).column(TIME_SQUEEZE))
    threshold = COUNT // BACKLOG_WEIGHT
    print(f"C15 netdev_budget={budget}: time_squeeze +{squeezed} for {COUNT} datagrams")
    if budget == "default":
        assert squeezed < threshold
    else:
        assert squeezed >= threshold
