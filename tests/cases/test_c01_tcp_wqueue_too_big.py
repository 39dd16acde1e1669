# SPDX-License-Identifier: GPL-2.0-only
"""C01 — TCPWqueueTooBig: an RTO retransmission blocked by tcp_fragment() stalls TCP.

Field story (field-cases C01; report 003 lines 5–150): after the 2019 fix for the "SACK
panic" (CVE-2019-11478, commit f070ef2ac667) production servers with small send buffers saw
connections stall for good: the RTO fired, ``ss`` showed rto and backoff growing and
``w22680`` queued against ``tb8192``, but no packet ever left, while ``netstat -s`` counted
TCPWqueueTooBig. Fixed by b617158dc096 ("tcp: be more careful in tcp_fragment()").

Mechanism: the retransmission of a queued skb larger than the current MSS must split it
with tcp_fragment(); the buggy limit refuses whenever sk_wmem_queued/2 > sk_sndbuf, so the
retransmission never reaches the wire and the timer just backs off.

Oracle: ``packetdrill/c01-tcp-wqueue-too-big-v4.pkt`` (plain packetdrill) expects the RTO
retransmission of the first unacked segment and a TcpExtTCPWqueueTooBig of 0. This test runs
it and additionally proves from the script's own ``ss``/``nstat`` output that the bug's
precondition held in that very run (queued bytes ``w`` far above the send buffer ``tb``) —
otherwise a pass would say nothing. The broken variant runs the same oracle with the
retransmission dropped by a firewall rule inside the script's namespace (the script's own
rto_min of 2 s leaves time to put the rule in place, even in slow guests): the script then
fails as on a buggy kernel (``Timed out waiting for packet`` at the retransmission line),
a strict xfail. A second broken variant lowers the route's rto_min to 200 ms: the
retransmission then leaves ~0.3 s after the tail, before the 2 s the timer was armed for, and
the script's early bound fails it (``timing error`` at the same line): a slow machine may
make the RTO late, and nothing may make it early.

To see it fail on the bug: build Debian's 6.1 with ``kernels/mutants/tcp-c01-*.patch``
re-introducing the 2019 limit (README, "Reproducing a field bug") and run this test with
``--kernel`` on it; ``scripts/check-reintroduced-bug`` does both.
"""

import re
from pathlib import Path

import pytest

from netns import sockets
from netns.variants import broken
from packetdrill.pytest_plugin import describe_run, run_for_test

pytestmark = [pytest.mark.tcp, pytest.mark.packetdrill]

SCRIPT = Path(__file__).parent / "packetdrill" / "c01-tcp-wqueue-too-big-v4.pkt"
RETRANSMISSION = "> . 3001:4461(1460) ack 1"
# The drop rule goes in after the last original segment left, and must be in place before the
# RTO fires: under TCG `iptables` alone takes longer than a 200 ms RTO (bullseye 5.10 guest:
# the retransmission escaped and the broken variant XPASSed); the script's rto_min is 2 s.
DROP_RETRANSMISSION = "   +0 `iptables -w -A OUTPUT -p tcp -j DROP`\n"


def counters(stdout: str) -> dict[str, int]:
    """nstat lines the script printed (``Name  value  rate``)."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(Tcp\w+)\s+(\d+)\s", stdout, re.M)}


RTO_MIN = "rto_min 2s"
EARLY_RTO_MIN = "rto_min 200ms"


def script(tmp_path: Path, breakage: str | None) -> Path:
    """The C01 script, or a broken variant's copy: its namespace drops the retransmission
    (``dropped``), or its route lets the RTO fire at 200 ms (``early``)."""
    if breakage is None:
        return SCRIPT
    text = SCRIPT.read_text()
    if breakage == "dropped":
        line = next(line for line in text.splitlines(keepends=True) if RETRANSMISSION in line)
        text = text.replace(line, DROP_RETRANSMISSION + line)
    else:
        assert text.count(RTO_MIN) == 1, f"{SCRIPT.name}: expected one '{RTO_MIN}'"
        text = text.replace(RTO_MIN, EARLY_RTO_MIN)
    copy = tmp_path / SCRIPT.name
    copy.write_text(text)
    return copy


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(None, id="kernel"),
        broken(
            "dropped",
            id="retransmission-dropped",
            why="a firewall rule drops the retransmission, as the buggy kernel never sends it",
        ),
        broken(
            "early",
            id="rto-early",
            why="rto_min 200 ms: the retransmission leaves ~0.3 s after the tail, before 2 s",
        ),
    ],
)
def test_c01_rto_retransmission_not_blocked(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    record_testsuite_property,
    breakage: str | None,
) -> None:
    result = run_for_test(request.config, script(tmp_path, breakage), "ipv4")
    socks = [s for s in sockets.parse(result.stdout) if "w" in s.skmem and "tb" in s.skmem]
    assert socks, f"the script's ss dump is missing:\n{result.stdout}\n{result.message}"
    skmem = socks[0].skmem
    record_testsuite_property("c01_skmem", skmem)
    assert skmem["w"] > 2 * skmem["tb"], f"precondition not met: w={skmem['w']} tb={skmem['tb']}"
    assert result.passed, describe_run(result)
    seen = counters(result.stdout)
    assert seen["TcpExtTCPWqueueTooBig"] == 0
    assert seen["TcpRetransSegs"] >= 1
