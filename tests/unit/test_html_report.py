# SPDX-License-Identifier: GPL-2.0-only
"""The HTML reports, end to end on real runs: pytest-html for one run, matrix.html in Chromium.

Both start from a broken variant of case C02's script: the corked response is expected with 300
bytes instead of 346, and half a second later. The kernel's (correct, immediate) segment fails
the payload check whatever the timing tolerance (a loaded host or an emulated guest widens
it), and the plot shows the expected box well right of the actual segment: a real failing
``.pkt`` item with a real pcap, no VM needed.
"""

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "tests/cases/packetdrill/c02-cork-two-writes.pkt"
ON_TIME = "   +0 > P. 1:347(346) ack 1\n"
BROKEN = "  +.5 > P. 1:301(300) ack 1\n"  # 300 bytes, half a second later


def broken_c02(folder: Path) -> tuple[Path, int]:
    """The broken script in *folder*, and the line its failure names (the late packet)."""
    text = CASE.read_text()
    assert text.count(ON_TIME) == 1, "C02's script changed: update the broken variant"
    script = folder / "c02-broken.pkt"
    script.write_text(text.replace(ON_TIME, BROKEN))
    line = text[: text.index(ON_TIME)].count("\n") + 1
    return script, line


def _pytest_html_tests(report: Path) -> dict[str, list[dict[str, object]]]:
    """pytest-html keeps its results as JSON in the page's data-jsonblob attribute."""
    blob = re.search(r'data-jsonblob="([^"]*)"', report.read_text())
    assert blob, "no pytest-html data in the report"
    return json.loads(html.unescape(blob.group(1)))["tests"]


def test_host_run_report_shows_message_pcap_and_overlaid_plot(
    tmp_path: Path, opted_in: None
) -> None:
    script, line = broken_c02(tmp_path)
    report = tmp_path / "report" / "report.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(script),
            "-k",
            "ipv4 and not mapped",
            f"--rootdir={tmp_path}",
            "-p",
            "no:cacheprovider",
            f"--html={report}",
            "--self-contained-html",
            f"--artifacts-dir={tmp_path / 'artifacts'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (item,) = _pytest_html_tests(report)["c02-broken.pkt::ipv4"]
    assert item["result"] == "Failed"
    page = html.unescape(json.dumps(item))
    assert f"c02-broken.pkt:{line}: error handling packet: live packet payload" in page
    pcap = tmp_path / "artifacts" / "c02-broken.pkt_ipv4" / "01-c02-broken-ipv4.pcap"
    assert pcap.is_file()
    assert 'href=\\"../artifacts/c02-broken.pkt_ipv4/01-c02-broken-ipv4.pcap\\"' in page
    assert "<svg" in page and f"expected (line {line})" in page
    assert page.count("<path") > 10


def test_matrix_html_drill_down_in_chromium(
    chromium: Any, tmp_path: Path, pytestconfig: pytest.Config, opted_in: None
) -> None:
    from selenium.webdriver.common.by import By

    script, line = broken_c02(tmp_path)
    out = tmp_path / "matrix"
    proc = subprocess.run(
        [
            str(REPO / "scripts/matrix"),
            "--kernels",
            "running",
            "--output",
            str(out),
            f"--rootdir={tmp_path}",
            str(script),
            "-k",
            "ipv4 and not mapped",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the failing cell
    driver = chromium
    driver.get((out / "matrix.html").as_uri())
    detail = driver.find_element(By.CSS_SELECTOR, "section.detail")
    assert not detail.is_displayed()
    driver.find_element(By.CSS_SELECTOR, "td.v-fail a").click()
    assert detail.is_displayed()
    message = detail.find_element(By.CSS_SELECTOR, "pre.message").text
    assert f"c02-broken.pkt:{line}: error handling packet: live packet payload" in message
    plot = detail.find_element(By.CSS_SELECTOR, ".nr-plot svg")
    assert plot.size["width"] > 200 and plot.size["height"] > 100
    assert len(plot.find_elements(By.CSS_SELECTOR, "path")) > 10
    assert f"expected (line {line})" in plot.get_attribute("innerHTML")
    box = driver.find_element(By.ID, "filter")
    row = driver.find_element(By.CSS_SELECTOR, "#grid tbody tr")
    box.send_keys("c02 nosuchword")
    assert not row.is_displayed()
    box.clear()
    box.send_keys("c02 FAIL")
    assert row.is_displayed()
    shots = pytestconfig.rootpath / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(shots / "matrix-drill-down.png"))


def _engine_pcap(script: Path, pcap: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "packetdrill", "--ip_version=ipv4", f"--pcap={pcap}", str(script)],
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert pcap.is_file()
    return pcap


def test_trace_diff_aligns_real_traces_and_names_the_first_divergence(tmp_path: Path) -> None:
    """C02 corked (one 346-byte segment) against C02 without the cork (288 bytes first):
    two real traces of the same script whose first difference is that segment's length."""
    from evidence.tracediff import align, describe, first_divergence, read_rows

    uncorked = tmp_path / "c02-uncorked.pkt"
    text = CASE.read_text()
    cork = "   +0 setsockopt(4, IPPROTO_TCP, TCP_CORK, [1], 4) = 0\n"
    assert cork in text
    uncorked.write_text(text.replace(cork, ""))
    good = read_rows(_engine_pcap(CASE, tmp_path / "corked.pcap"))
    bad = read_rows(_engine_pcap(uncorked, tmp_path / "uncorked.pcap"))
    pairs = align(good, bad)
    first = first_divergence(pairs)
    assert first == 3  # SYN, SYN-ACK, ACK agree; then the response
    assert pairs[first].left is not None and pairs[first].left.length == 346
    assert pairs[first].right is not None and pairs[first].right.length == 288
    assert "length 346 vs 288" in describe(pairs, first, "corked", "uncorked")
    assert first_divergence(align(good, good)) is None


def test_matrix_page_colours_every_verdict_and_keeps_the_crash_console(tmp_path: Path) -> None:
    from kernels.matrix.results import TestResult
    from kernels.matrix.runner import KernelRun
    from kernels.report import html as matrix_html
    from kernels.report import record
    from kernels.report.model import build
    from kernels.vm.console import Crash

    tests = [f"t.py::test_{name}" for name in ("a", "b", "c", "d", "e")]
    old = KernelRun(
        "old",
        tmp_path / "out/old",
        results=[
            TestResult(tests[0], "pass"),
            TestResult(tests[1], "fail", "assert 1 == 2"),
            TestResult(tests[2], "xfail", "known: fixed in 6.2"),
            TestResult(tests[3], "skip", "needs gre"),
            TestResult(tests[4], "fail", "[XPASS(strict)] known: fixed in 6.2"),
        ],
    )
    dead = KernelRun(
        "dead",
        tmp_path / "out/dead",
        results=[TestResult(tests[0], "pass")],
        problem=Crash("Kernel panic - not syncing", "RIP: 0010:tcp_fragment"),
    )
    page = tmp_path / "out/matrix.html"
    rec = record.Record("0123456789ab", "2025-06-01T12:00:00+00:00", "x86_64", (1, 1), [], [])
    page.parent.mkdir()
    matrix_html.write(build([old, dead], tests), rec, page.parent)
    text = page.read_text()
    for verdict in ("pass", "fail", "xfail", "skip", "xpass", "crash"):
        assert f'class="cell v-{verdict}"' in text, verdict
    assert 'title="needs gre"' in text
    assert "RIP: 0010:tcp_fragment" in text and 'href="../dead/console.log"' not in text
    assert 'href="dead/console.log"' in text
    assert 'id="filter"' in text and "<script>" in text and "http" not in text.split("<body>")[1]


def test_matrix_keeps_passing_pcaps_only_where_another_kernel_failed(tmp_path: Path) -> None:
    from kernels.matrix.results import TestResult
    from kernels.matrix.runner import KernelRun
    from kernels.report import kept_pcaps
    from kernels.report.html import evidence_dir
    from kernels.report.model import build

    split, green = "t.py::test_split", "t.py::test_green"
    good = KernelRun(
        "good", tmp_path / "good", results=[TestResult(split, "pass"), TestResult(green, "pass")]
    )
    bad = KernelRun(
        "bad",
        tmp_path / "bad",
        results=[TestResult(split, "fail", "assert"), TestResult(green, "pass")],
    )
    for run in (good, bad):
        for nodeid in (split, green):
            evidence_dir(run, nodeid).mkdir(parents=True)
            (evidence_dir(run, nodeid) / "01-x.pcap").write_bytes(b"")
    assert kept_pcaps.prune(build([good, bad], [split, green])) == 2
    assert evidence_dir(good, split).is_dir() and evidence_dir(bad, split).is_dir()
    assert not evidence_dir(good, green).exists() and not evidence_dir(bad, green).exists()
