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
otherwise a pass would say nothing. The broken variant drops the retransmission with a
firewall rule inside the script's namespace: the script then fails exactly as on a buggy
kernel, ``Timed out waiting for packet`` at the retransmission line.

To see it fail on the bug: build Debian's 6.1 with ``kernels/patches`` re-introducing the
2019 limit (README, "Reproducing a field bug") and run this test with ``--kernel`` on it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from netns import sockets
from netns.packetdrill.result import RunResult
from netns.packetdrill.pytest_plugin import PktItem, run_for_test

SCRIPT = Path(__file__).parent / "packetdrill" / "c01-tcp-wqueue-too-big-v4.pkt"
RETRANSMISSION = "> . 3001:4461(1460) ack 1"
DROP_RETRANSMISSION = "   +0 `iptables -w -A OUTPUT -p tcp -j DROP`\n"


def counters(stdout: str) -> dict[str, int]:
    """nstat lines the script printed (``Name  value  rate``)."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(Tcp\w+)\s+(\d+)\s", stdout, re.M)}


def run(request: pytest.FixtureRequest, script: Path) -> RunResult:
    return run_for_test(request.config, script, "ipv4")


def test_c01_rto_retransmission_not_blocked(request: pytest.FixtureRequest,
                                            record_testsuite_property) -> None:
    result = run(request, SCRIPT)
    socks = [s for s in sockets.parse(result.stdout) if "w" in s.skmem and "tb" in s.skmem]
    assert socks, f"the script's ss dump is missing:\n{result.stdout}\n{result.message}"
    skmem = socks[0].skmem
    record_testsuite_property("c01_skmem", skmem)
    assert skmem["w"] > 2 * skmem["tb"], f"precondition not met: w={skmem['w']} tb={skmem['tb']}"
    assert result.passed, PktItem.describe(result)
    seen = counters(result.stdout)
    assert seen["TcpExtTCPWqueueTooBig"] == 0
    assert seen["TcpRetransSegs"] >= 1


def test_c01_broken_variant_missing_retransmission_is_caught(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    text = SCRIPT.read_text()
    line = next(line for line in text.splitlines(keepends=True) if RETRANSMISSION in line)
    broken = tmp_path / SCRIPT.name
    broken.write_text(text.replace(line, DROP_RETRANSMISSION + line))
    result = run(request, broken)
    assert not result.passed
    assert "Timed out waiting for packet" in result.message, PktItem.describe(result)
    assert result.line == text.splitlines().index(line.rstrip("\n")) + 2

