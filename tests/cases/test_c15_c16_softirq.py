# SPDX-License-Identifier: GPL-2.0-only
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
- C16: with ``rps_cpus`` = CPU 1 on the receiving veth, CPU 1 takes RPS IPIs, runs NET_RX
  softirqs and processes at least every datagram sent. The broken variant runs the same
  oracle with RPS off (mask 0): no RPS IPI reaches CPU 1 on behalf of this veth, so it
  must fail (strict xfail). Other traffic on the machine could add processed packets to
  CPU 1, but RPS IPIs only where someone else enabled RPS: the IPI count is checked first.
- C15 (VM only: netdev_budget is global): with budget 1 every NET_RX round that does work
  squeezes, so time_squeeze grows by at least count/64 (64 = backlog weight); the broken
  variant runs that oracle at the default budget (300), where it must fail. Both variants
  raise ``netdev_budget_usecs`` so that the time limit (a jiffy tick in a slow VM) cannot
  squeeze.
"""

import os

import pytest

from netns.features import in_netregress_vm
from netns.softnet import GUEST_ONLY, PROCESSED, RECEIVED_RPS, TIME_SQUEEZE, GlobalSysctls, Snapshot
from netns.topology import Network
from netns.traffic import udp_burst
from netns.variants import broken

pytestmark = [pytest.mark.softirq]

COUNT = 3000
SENDER_CPU, RPS_CPU = 0, 1
BACKLOG_WEIGHT = 64

needs_two_cpus = pytest.mark.skipif(
    (os.cpu_count() or 1) < 2, reason="RPS placement needs at least 2 CPUs"
)


def _burst(net: Network) -> Snapshot:
    before = Snapshot.take()
    sent = udp_burst(net["a"], "10.0.0.2", count=COUNT, cpu=SENDER_CPU)
    assert sent == COUNT
    return Snapshot.take() - before


@needs_two_cpus
@pytest.mark.needs_root(
    "sets rps_cpus (the kernel asks for CAP_NET_ADMIN in the initial namespace)"
)
@pytest.mark.parametrize(
    "mask",
    [
        pytest.param(1 << RPS_CPU, id="rps_to_cpu1"),
        broken(0, id="no_rps", why="RPS off: the sender's CPU processes its own veth's packets"),
    ],
)
def test_c16_rps_moves_veth_rx_softirq_to_the_chosen_cpu(veth_pair: Network, mask: int) -> None:
    queue = "/sys/class/net/eth0/queues/rx-0/rps_cpus"
    # run() gives a command naming /sys its own sysfs mount, as `ip netns exec` does, so this
    # is the test namespace's own eth0.
    veth_pair["b"].run(["sh", "-c", f"echo {mask:x} > {queue}"])
    assert int(veth_pair["b"].run(["cat", queue]).stdout.strip().replace(",", ""), 16) == mask
    delta = _burst(veth_pair)
    processed = delta.column(PROCESSED)
    report = f"processed per CPU {processed}, NET_RX per CPU {delta.net_rx}"
    assert delta.column(RECEIVED_RPS)[RPS_CPU] > 0, report
    assert delta.net_rx[RPS_CPU] > 0, report
    assert processed[RPS_CPU] >= COUNT, report


@pytest.mark.skipif(
    not in_netregress_vm(), reason=GUEST_ONLY.format(knob="net.core.netdev_budget(_usecs)")
)
@pytest.mark.parametrize(
    "budget",
    [
        1,
        broken(
            None,
            id="default-budget",
            why="at the default budget (300) a 64-packet backlog round never runs out of budget",
        ),
    ],
)
def test_c15_tiny_netdev_budget_raises_time_squeeze(veth_pair: Network, budget: int | None) -> None:
    # A generous time budget in both variants, so only the packet budget can squeeze.
    knobs: dict[str, int | str] = {"net.core.netdev_budget_usecs": 1_000_000}
    if budget is not None:
        knobs["net.core.netdev_budget"] = budget
    with GlobalSysctls(knobs):
        squeezed = sum(_burst(veth_pair).column(TIME_SQUEEZE))
    threshold = COUNT // BACKLOG_WEIGHT
    print(
        f"C15 netdev_budget={budget or 'default'}: time_squeeze +{squeezed} for {COUNT} datagrams"
    )
    assert squeezed >= threshold
