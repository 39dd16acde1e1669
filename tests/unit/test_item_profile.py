# SPDX-License-Identifier: GPL-2.0-only
"""Where a test's time goes: the spans the library counts (netregress/spans.py), the line per
test the guest's phase plugin writes, the engine's own phases handed back with its result, and
the per-kind table `scripts/bench-vm` prints from them (kernels/vm/item_profile.py)."""

import json
import time
from pathlib import Path

import pytest

from kernels.cli.bench import main as bench_main
from kernels.vm import item_profile, phases
from netregress import spans
from packetdrill.backend import Backend, run_isolated
from packetdrill.engine_process import ENGINE_CPU


def test_a_span_counts_its_block_also_when_it_raises_and_take_starts_again() -> None:
    spans.take()
    with pytest.raises(ValueError), spans.span("namespaces"):
        time.sleep(0.02)
        raise ValueError
    spans.add("namespaces", 1.0)
    taken = spans.take()
    assert set(taken) == {"namespaces"}
    assert taken["namespaces"] >= 1.02
    assert spans.take() == {}


def test_the_phase_plugin_writes_a_line_per_test_with_its_spans_and_cpu(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = pytester.path / phases.FILE
    monkeypatch.setenv(phases.ENV, str(log))
    pytester.makepyfile(
        "import time\n"
        "from netregress import spans\n"
        "def test_waits():\n"
        "    with spans.span('tcpdump-start'):\n"
        "        time.sleep(0.2)\n"
        "def test_burns():\n"
        "    end = time.process_time() + 0.2\n"
        "    while time.process_time() < end: pass\n"
    )
    pytester.runpytest_subprocess("-p", "kernels.vm.phases").assert_outcomes(passed=2)
    lines = {entry["nodeid"].split("::")[1]: entry for entry in phases.read(log).items}
    waits, burns = lines["test_waits"], lines["test_burns"]
    assert waits["spans"]["tcpdump-start"] >= 0.2
    assert waits["call"] >= 0.2 and waits["wall"] >= waits["call"]
    assert waits["cpu"] < 0.1  # it slept
    assert burns["spans"] == {}  # nothing of one test leaks into the next
    assert burns["cpu"] >= 0.2


def _entry(nodeid: str, call: float, **kinds: float) -> dict[str, object]:
    return {"phase": "item", "nodeid": nodeid, "wall": call + 0.1, "setup": 0.0, "call": call,
            "teardown": 0.0, "cpu": 0.0, "children_cpu": 0.0, "spans": kinds}  # fmt: skip


def test_the_table_averages_per_kind_and_shows_what_no_span_covers(tmp_path: Path) -> None:
    log = tmp_path / phases.FILE
    pkt = "tests/packetdrill/tcp/a.pkt"
    entries = [
        _entry(f"{pkt}::ipv4", 2.0, **{"engine-run": 1.5, "engine:script": 1.0}),
        _entry(f"{pkt}::ipv6", 4.0, **{"engine-run": 3.5, "engine:script": 3.0}),
        _entry("tests/cases/test_c01_x.py::test_y", 1.0),
        _entry("/src/tools/testing/selftests/net/packetdrill/t.pkt::ipv4", 1.0),
    ]  # fmt: skip
    log.write_text("".join(json.dumps(entry) + "\n" for entry in entries) + '{"phase":"it')
    kinds = item_profile.by_kind(phases.read(log).items)
    assert [(kind.name, kind.tests) for kind in kinds] == [
        ("our engine's .pkt", 2), ("Python case", 1), ("kernel corpus .pkt", 1)
    ]  # fmt: skip
    table = dict(item_profile.rows(kinds))
    assert table["engine-run"][0] == pytest.approx(2.5)
    assert table["  engine:script"][0] == pytest.approx(2.0)  # inside engine-run, not added
    assert table["rest of set-up + call + teardown"] == pytest.approx([0.5, 1.0, 1.0])
    assert table["  pytest's own (reports, hooks)"][1] == pytest.approx(0.1)
    text = item_profile.render(phases.read(log).items)
    assert "our engine's .pkt (2)" in text.splitlines()[0]


def test_bench_prints_the_table_of_kept_runs_and_says_when_there_are_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench_main(["--profile", str(tmp_path)]) != 0
    assert f"no {phases.FILE} under {tmp_path}" in capsys.readouterr().err
    kept = tmp_path / "bookworm-6.1"
    kept.mkdir()
    (kept / phases.FILE).write_text(json.dumps(_entry("tests/cases/test_c.py::test_d", 1.0)))
    assert bench_main(["--profile", str(tmp_path)]) == 0
    assert "Python case (1)" in capsys.readouterr().out


def test_the_engine_hands_back_where_its_run_went(tmp_path: Path) -> None:
    script = tmp_path / "sleep.pkt"
    script.write_text("0 `sleep 0.2`\n")
    spans.take()
    result = run_isolated(Backend("builtin"), str(script), [("ip_version", "ipv4")])
    assert result.passed, result.message + result.stderr
    assert result.phases["script"] >= 0.2
    assert result.phases["shell"] >= 0.2  # the command inside the script, counted apart too
    assert {"parse", "netns", "tun", "teardown"} <= set(result.phases)
    counted = spans.take()
    assert counted["engine:script"] == result.phases["script"]
    assert counted["engine-run"] >= result.phases["script"]
    assert 0 < counted[ENGINE_CPU] < counted["engine-run"]  # the run's CPU: it mostly slept
