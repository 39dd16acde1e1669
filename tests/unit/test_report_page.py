# SPDX-License-Identifier: GPL-2.0-only
"""report.html opens on what needs a person: the real failure first with its plot above its
text, the broken variants (expected failures) folded, and an environment table that says
which packetdrill engine ran and by which timing tolerance it judged.

One pytester run holds all three kinds: a ``.pkt`` script whose last packet is expected with
half its real length (a real failure with a real pcap), and a Python case with a pass and its
broken variant (a strict xfail). The run uses the project's own pytest configuration.
"""

import hashlib
import html
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

SHORT = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 32792 <mss 1460,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <...>
  +.1 < . 1:1(0) ack 1 win 257
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 100) = 100
   +0 > P. 1:51(50) ack 1
"""

CASE = """\
import pytest
from netns.variants import broken

@pytest.mark.parametrize("size", [1, broken(2, id="two", why="two is not one")])
def test_one(size):
    assert size == 1
"""


def _project_ini() -> str:
    """The project's own pytest settings (pyproject.toml), for the pytester run's folder."""
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    lines = [f"{key} = {json.dumps(value)}" for key, value in options["ini_options"].items()]
    return "[tool.pytest.ini_options]\n" + "\n".join(lines) + "\n"


@pytest.fixture
def report(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The run, in a pytest process of its own: matplotlib, like numpy under it, cannot be
    imported again in a process, which an in-process pytester run would do."""
    monkeypatch.setenv("KSFT_MACHINE_SLOW", "yes")
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # this checkout, not an installed copy
    pytester.makepyprojecttoml(_project_ini())
    pytester.makefile(".pkt", **{"short-v4": SHORT})
    pytester.makepyfile(test_case=CASE)
    page = pytester.path / "out" / "report.html"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--pkt-ip-version=ipv4", f"--html={page}", "--self-contained-html"
    )
    result.assert_outcomes(failed=1, passed=1, xfailed=1)
    return page


def _data(page: Path) -> dict[str, object]:
    """pytest-html keeps its results as JSON in the page's data-jsonblob attribute."""
    blob = re.search(r'data-jsonblob="([^"]*)"', page.read_text())
    assert blob, "no pytest-html data in the report"
    data: dict[str, object] = json.loads(html.unescape(blob.group(1)))
    return data


def test_the_environment_names_the_engine_its_tolerance_and_the_slack_it_ran_with(
    report: Path,
) -> None:
    data = _data(report)
    env = data["environment"]
    assert isinstance(env, dict)
    assert re.fullmatch(r"builtin, netregress \S+", env["packetdrill engine"])
    timing = env["packetdrill timing"]
    assert "base tolerance 4000 us or 12.5% of the gap" in timing and "bound +30 ms" in timing
    assert re.fullmatch(r"\+\d+\.\d ms \(calibrated\)", env["packetdrill slack used"])
    assert env["packetdrill options"] == "every script with IP variants ipv4 only"
    assert env["KSFT_MACHINE_SLOW"] == "yes"
    assert data["renderCollapsed"] == ["passed", "xfailed"] and data["initialSort"] == "result"
    tests = data["tests"]
    assert isinstance(tests, dict)
    (failed,) = tests["short-v4.pkt::ipv4"]
    assert failed["result"] == "Failed"
    (plot,) = [extra["content"] for extra in failed["extras"] if extra["format_type"] == "html"]
    assert "<svg" in plot and 'id="nr-legend"' in plot and "expected (line 10)" in plot


def test_in_chromium_the_failure_and_its_plot_come_first_and_broken_variants_are_folded(
    chromium: Any, report: Path
) -> None:
    from selenium.webdriver.common.by import By

    driver = chromium
    driver.get(report.as_uri())
    rows = driver.find_elements(By.CSS_SELECTOR, "#results-table tbody.results-table-row")
    assert [row.get_attribute("class").split()[-1] for row in rows] == [
        "failed",
        "xfailed",
        "passed",
    ]
    failed, xfailed, _ = rows
    assert failed.find_element(By.CSS_SELECTOR, ".extras-row").is_displayed()
    plot = failed.find_element(By.CSS_SELECTOR, ".extraHTML .nr-plot svg")
    log = failed.find_element(By.CSS_SELECTOR, ".log")
    assert plot.is_displayed() and plot.location["y"] < log.location["y"]
    assert not xfailed.find_element(By.CSS_SELECTOR, ".extras-row").is_displayed()
    environment = driver.find_element(By.ID, "environment").text
    assert "packetdrill engine" in environment and "KSFT_MACHINE_SLOW" in environment


def test_an_upstream_binary_is_named_with_its_digest_and_a_forced_slack_with_its_source(
    pytester: pytest.Pytester,
) -> None:
    """packetdrill has no version of its own: the binary's sha256 tells two builds apart."""
    binary = pytester.path / "packetdrill"
    binary.write_bytes(b"#!/bin/sh\nexit 1\n")
    binary.chmod(0o755)
    pytester.makefile(".pkt", **{"short-v4": SHORT})
    page = pytester.path / "report.html"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--collect-only", f"--packetdrill={binary}",
        "--tolerance-scale=3", f"--html={page}",
    )  # fmt: skip
    assert result.ret == 0
    env = _data(page)["environment"]
    assert isinstance(env, dict)
    digest = hashlib.sha256(binary.read_bytes()).hexdigest()[:16]
    assert env["packetdrill engine"] == f"upstream binary {binary} (sha256 {digest}…)"
    assert "late-side timing slack +8.0 ms (--tolerance-scale=3)" in env["packetdrill timing"]
    assert "packetdrill slack used" not in env  # no script ran


def test_a_python_cases_evidence_names_the_counters_that_moved_and_lists_its_packets(
    tmp_path: Path,
) -> None:
    """What a Python case leaves (a pcap, a counter snapshot) reads on the page in words: the
    non-zero deltas by name, and the packets a tcpdump-like line each, bounded, without a
    byte of payload."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap

    from evidence.page import evidence_html
    from netns.counters import SNAPSHOT_SUFFIX, Delta

    frames = [
        Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=port, dport=9) / Raw(b"x" * 200)
        for port in range(1, 31)
    ]
    for index, frame in enumerate(frames):
        frame.time = 100 + index * 0.001
    wrpcap(str(tmp_path / "01-b-eth0.pcap"), frames)
    delta = Delta(
        {"UdpNoPorts": 5, "IpInReceives": 0, "TcpInSegs": 7},
        {"UdpNoPorts": 35, "IpInReceives": 30, "TcpInSegs": 7},
    )
    snapshot = {"moved": delta.nonzero(), "before": delta.before, "after": delta.after}
    (tmp_path / f"02-b{SNAPSHOT_SUFFIX}").write_text(json.dumps(snapshot))

    page = html.unescape(evidence_html(tmp_path, "assert 30 == 31", tmp_path))
    counters = re.search(r"counters moved in 02-b-nstat.json:</p><pre>(.*?)</pre>", page, re.S)
    assert counters and counters.group(1).split("\n") == ["UdpNoPorts    +30", "IpInReceives  +30"]
    packets = re.search(r"packets in 01-b-eth0.pcap:</p><pre>(.*?)</pre>", page, re.S)
    assert packets
    lines = packets.group(1).split("\n")
    assert lines[0] == "0.000000 IP 10.0.0.1.1 > 10.0.0.2.9: UDP, length 200"
    assert lines[8] == "… 18 more" and len(lines) == 13
    assert lines[-1] == "0.029000 IP 10.0.0.1.30 > 10.0.0.2.9: UDP, length 200"
    assert "xxxx" not in page
