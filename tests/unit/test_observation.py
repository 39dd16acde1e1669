# SPDX-License-Identifier: GPL-2.0-only
"""Captures, counting helpers, nstat deltas and ss parsing against real TCP traffic."""

import ast
import sys
import textwrap
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

from netns import capture, counters, sockets, traffic
from netns.topology import Network

# A bounded TCP exchange: b listens, a connects and sends, both print nothing.
SERVER = textwrap.dedent("""
    import socket, sys
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.0.0.2", 5001)); s.listen(); print("ready", flush=True)
    c, _ = s.accept()
    while c.recv(65536):
        pass
""")
CLIENT = textwrap.dedent("""
    import socket
    c = socket.create_connection(("10.0.0.2", 5001), timeout=5)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(5):
        c.send(b"x" * 100)
        c.recv(1) if False else None
    c.close()
""")


def _serve(net: Network):
    proc = net["b"].spawn([sys.executable, "-u", "-c", SERVER], stdout=-1)
    assert proc.stdout.readline().strip() == b"ready"
    return proc


def test_tcp_exchange_counted_by_helpers(veth_pair: Network) -> None:
    server = _serve(veth_pair)
    with veth_pair["b"].capture("eth0", "tcp port 5001") as cap:
        veth_pair["a"].run([sys.executable, "-c", CLIENT])
        server.wait(5)
    data = capture.data_segments(cap.packets, src="10.0.0.1", dport=5001)
    assert 1 <= len(data) <= 5
    assert sum(capture.tcp_payload_len(p) for p in data) == 500
    acks = capture.pure_acks(cap.packets, src="10.0.0.2")
    assert len(acks) >= 1
    flows = capture.by_flow(cap.packets)
    assert len(flows) == 2  # one TCP connection, both directions


def test_nstat_delta_counts_this_namespace_only(veth_pair: Network) -> None:
    a, b = veth_pair["a"], veth_pair["b"]
    with b.nstat() as delta_b, a.nstat() as delta_a:
        a.run(["ping", "-c", "3", "-i", "0.05", "-W", "2", "10.0.0.2"])
    assert delta_b["IcmpInEchos"] == 3
    assert delta_a["IcmpInEchoReps"] == 3
    assert delta_a["IcmpInEchos"] == 0
    assert "IcmpInEchos" in delta_b.nonzero()


def test_nstat_unknown_counter_fails_loudly(ns) -> None:
    with ns.nstat() as delta:
        pass
    with pytest.raises(KeyError, match="did you mean"):
        delta["TcpExtTCPWqueueTooBigg"]


SS_SAMPLE = (
    "ESTAB 0      67259  127.0.0.1:40680 127.0.0.1:5555 \n"  # ss ends the line with a space
    "\t skmem:(r0,rb131072,t0,tb8192,f709,w22680,o0,bl0,d3) cubic wscale:10,10 rto:1632"
    " backoff:3 rtt:0.022/0.009 mss:1448 cwnd:1 ssthresh:7 bytes_sent:134518 unacked:5"
    " retrans:1/4 lost:5 bbr:(bw:1bps,mrtt:0.02) rcv_space:65495\n"
)


def test_ss_parse_sample() -> None:
    (sock,) = sockets.parse(SS_SAMPLE)
    assert sock.state == "ESTAB" and sock.send_q == 67259
    assert sock.skmem["w"] == 22680 and sock.skmem["tb"] == 8192 and sock.skmem["d"] == 3
    assert sock.rto == 1632 and sock.backoff == 3 and sock.cwnd == 1
    assert sock.retrans == (1, 4) and sock.lost == 5 and sock.unacked == 5
    assert sock.local_port == 40680 and sock.peer_port == 5555


def test_ss_live_listening_socket(veth_pair: Network) -> None:
    server = _serve(veth_pair)
    listening = [s for s in veth_pair["b"].ss("state listening") if s.local_port == 5001]
    assert len(listening) == 1 and "rb" in listening[0].skmem
    server.stop()


def test_capture_waits_for_event_instead_of_sleeping(veth_pair: Network) -> None:
    with veth_pair["b"].capture("eth0", "icmp") as cap:
        veth_pair["a"].spawn(["ping", "-c", "2", "-i", "0.1", "10.0.0.2"])
        got = cap.wait_for(lambda p: True, count=4, timeout=5)
    assert len(got) == 4


def test_a_growing_pcap_is_dissected_once_and_only_whole_records(tmp_path: Path) -> None:
    """PcapTail reads a pcap as tcpdump writes it: after each byte written, exactly the
    packets whose records are complete, equal to what rdpcap makes of that prefix."""
    frames = [Ether() / IP(dst="10.0.0.2") / UDP(dport=9) / Raw(b"x" * n) for n in (1, 300, 7)]
    whole = tmp_path / "whole.pcap"
    wrpcap(str(whole), frames)
    data = whole.read_bytes()
    growing = tmp_path / "growing.pcap"
    tail = capture.PcapTail(growing)
    assert tail.read() == []  # tcpdump has not created it yet
    ends = {24 + sum(16 + len(f) for f in frames[:i]): i for i in range(len(frames) + 1)}
    seen = 0
    for size in range(1, len(data) + 1):
        growing.write_bytes(data[:size])
        got = tail.read()
        seen = ends.get(size, seen)
        assert [bytes(p) for p in got] == [bytes(f) for f in frames[:seen]], size
    assert [bytes(p) for p in got] == [bytes(p) for p in rdpcap(str(whole))]
    assert got[1][Raw].load == b"x" * 300 and got[0].time == rdpcap(str(whole))[0].time


def test_tcp_echo_works_from_inside_the_namespace(veth_pair: Network) -> None:
    """The in-process client's socket lives in *a*: it reaches b's server over the veth
    (seen on b's wire), and with nobody listening it is refused, not faked."""
    with (
        traffic.TcpEchoServer(veth_pair["b"], "10.0.0.2", 5002),
        veth_pair["b"].capture("eth0", "tcp port 5002") as cap,
    ):
        assert traffic.tcp_echo(veth_pair["a"], "10.0.0.2", 5002).ok
    assert {capture.flow_of(p)[0] for p in cap.packets} == {"10.0.0.1", "10.0.0.2"}
    refused = traffic.tcp_echo(veth_pair["a"], "10.0.0.2", 5003)
    assert refused.outcome == "ConnectionRefusedError"


def test_injected_frames_leave_the_namespaces_interface(veth_pair: Network) -> None:
    frame = Ether(src="02:00:00:00:00:99", dst="ff:ff:ff:ff:ff:ff") / IP(dst="10.0.0.2") / UDP()
    with veth_pair["b"].capture("eth0", "udp") as cap:
        traffic.inject_frames(veth_pair["a"], "eth0", [bytes(frame)])
        got = cap.wait_for(lambda p: p[Ether].src == "02:00:00:00:00:99")
    assert [bytes(p) for p in got] == [bytes(frame)]


def test_ping_answered_is_true_with_or_without_hopeless(veth_pair: Network) -> None:
    assert traffic.ping(veth_pair["a"], "10.0.0.2", count=2, hopeless=lambda: False)
    assert traffic.ping(veth_pair["a"], "10.0.0.2", count=2)


def test_ping_unanswered_stops_waiting_once_hopeless(veth_pair: Network) -> None:
    """No reply can come from an address nobody has; *hopeless* saying so ends the 30 s wait
    at its second look (a ping left to run would have been asked hundreds of times)."""
    looks: list[None] = []

    def hopeless() -> bool:
        looks.append(None)
        return len(looks) >= 2

    assert not traffic.ping(veth_pair["a"], "10.0.0.9", count=1, wait=30, hopeless=hopeless)
    assert len(looks) == 2


def test_grown_says_true_once_the_counter_grew_by_enough(veth_pair: Network) -> None:
    """The check a ping's *hopeless* polls: a counter of this namespace, from the call on."""
    a = veth_pair["a"]
    two_echoes = counters.grown(a, "IcmpOutEchos", 2)
    assert not two_echoes()
    assert traffic.ping(a, "10.0.0.2", count=1)
    assert not two_echoes()
    assert traffic.ping(a, "10.0.0.2", count=1)
    assert two_echoes()


def test_udp_burst_sends_every_datagram_seen_by_the_receiver(veth_pair: Network) -> None:
    """The helper program (netns/programs/udp_burst.py, run by path) reports what the socket
    accepted, and that many datagrams reach b's wire."""
    with veth_pair["b"].capture("eth0", "udp port 9") as cap:
        assert traffic.udp_burst(veth_pair["a"], "10.0.0.2", count=5) == 5
        got = cap.wait_for(lambda p: UDP in p, count=5)
    assert len(got) == 5


def _foreign_imports(path: Path) -> list[str]:
    """The imports in *path* that are not the standard library's."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return [n for n in names if n.split(".")[0] not in sys.stdlib_module_names]


def test_helper_programs_need_only_the_standard_library(tmp_path: Path) -> None:
    """They start with `python -S` (no site-packages): any other import would fail only in
    the namespace, as a helper that never became ready."""
    programs = sorted((Path(traffic.__file__).parent / "programs").glob("*.py"))
    assert {p.name for p in programs} >= {"echo_server.py", "udp_burst.py"}
    assert {p.name: _foreign_imports(p) for p in programs} == {p.name: [] for p in programs}
    sample = tmp_path / "sample.py"
    sample.write_text("import socket\nimport scapy.all\nfrom . import x\n")
    assert _foreign_imports(sample) == ["scapy.all", "."]
