# SPDX-License-Identifier: GPL-2.0-only
"""pcap → .pkt: a connection the engine scripted, captured, converted and replayed passes.

The round trip is the converter's real oracle: the generated script drives the same kernel
through the same connection and every outbound line it wrote must match what the kernel
sends again.
"""

import shutil
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.utils import rdpcap, wrpcap

from packetdrill.backend import Backend, run_isolated
from packetdrill.from_pcap import ConversionError, load, main, render

CORPUS = Path(__file__).parents[1] / "packetdrill"
ENGINE = Backend("builtin")
REMOTE = "192.0.2.1"  # the engine's default remote; the local address is random


@pytest.mark.parametrize(
    "script", ["tcp/passive-open-close.pkt", "tcp/active-open-nonblocking.pkt"]
)
def test_round_trip_replays_green(tmp_path: Path, script: str) -> None:
    pcap = tmp_path / "original.pcap"
    original = run_isolated(
        ENGINE, str(CORPUS / script), [("ip_version", "ipv4"), ("pcap", str(pcap))]
    )
    assert original.passed, original.message
    shutil.copy(CORPUS / "defaults.sh", tmp_path / "defaults.sh")
    generated = tmp_path / "generated.pkt"
    first = rdpcap(str(pcap))[0][IP]
    local = first.dst if first.src == REMOTE else first.src
    text = render(load(pcap, local), pcap.name, init="./defaults.sh")
    generated.write_text(text)
    replay = run_isolated(ENGINE, str(generated), [("ip_version", "ipv4")])
    assert replay.passed, f"{replay.message}\n--- generated script ---\n{text}"
    assert "< S 0:0(0)" in text or "> S 0:0(0)" in text


def test_capture_without_handshake_is_a_clear_error(tmp_path: Path, capsys) -> None:
    pcap = tmp_path / "udp.pcap"
    wrpcap(str(pcap), [IP(src="10.0.0.1", dst="10.0.0.2") / UDP(dport=53)])
    with pytest.raises(ConversionError, match="no TCP SYN found"):
        load(pcap)
    assert main([str(pcap)]) == 1
    assert "pcap2pkt:" in capsys.readouterr().err


def test_unreadable_capture_is_a_clear_error(tmp_path: Path, capsys) -> None:
    bogus = tmp_path / "bogus.pcap"
    bogus.write_text("not a pcap")
    assert main([str(bogus)]) == 1
    assert "cannot read capture" in capsys.readouterr().err
