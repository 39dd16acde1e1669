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
a strict xfail.

To see it fail on the bug: build Debian's 6.1 with ``kernels/patches`` re-introducing the
2019 limit (README, "Reproducing a field bug") and run this test with ``--kernel`` on it.
"""

import re
from pathlib import Path

import pytest

from netns import sockets
from netns.variants import broken
from packetdrill.pytest_plugin import PktItem, run_for_test

SCRIPT = Path(__file__).parent / "packetdrill" / "c01-tcp-wqueue-too-big-v4.pkt"
RETRANSMISSION = "> . 3001:4461(1460) ack 1"
# The drop rule goes in after the last original segment left, and must be in place before the
# RTO fires: under TCG `iptables` alone takes longer than a 200 ms RTO (bullseye 5.10 guest:
# the retransmission escaped and the broken variant XPASSed); the script's rto_min is 2 s.
DROP_RETRANSMISSION = "   +0 `iptables -w -A OUTPUT -p tcp -j DROP`\n"


def counters(stdout: str) -> dict[str, int]:
    """nstat lines the script printed (``Name  value  rate``)."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(Tcp\w+)\s+(\d+)\s", stdout, re.M)}


def script(tmp_path: Path, drop_retransmission: bool) -> Path:
    """The C01 script, or a copy whose namespace drops the retransmission (broken variant)."""
    if not drop_retransmission:
        return SCRIPT
    text = SCRIPT.read_text()
    line = next(line for line in text.splitlines(keepends=True) if RETRANSMISSION in line)
    copy = tmp_path / SCRIPT.name
    copy.write_text(text.replace(line, DROP_RETRANSMISSION + line))
    return copy


@pytest.mark.parametrize(
    "drop_retransmission",
    [
        pytest.param(False, id="kernel"),
        broken(
            True,
            id="retransmission-dropped",
            why="a firewall rule drops the retransmission, as the buggy kernel never sends it",
        ),
    ],
)
def test_c01_rto_retransmission_not_blocked(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    record_testsuite_property,
    drop_retransmission: bool,
) -> None:
    result = run_for_test(request.config, script(tmp_path, drop_retransmission), "ipv4")
    socks = [s for s in sockets.parse(result.stdout) if "w" in s.skmem and "tb" in s.skmem]
    assert socks, f"the script's ss dump is missing:\n{result.stdout}\n{result.message}"
    skmem = socks[0].skmem
    record_testsuite_property("c01_skmem", skmem)
    assert skmem["w"] > 2 * skmem["tb"], f"precondition not met: w={skmem['w']} tb={skmem['tb']}"
    assert result.passed, PktItem.describe(result)
    seen = counters(result.stdout)
    assert seen["TcpExtTCPWqueueTooBig"] == 0
    assert seen["TcpRetransSegs"] >= 1
