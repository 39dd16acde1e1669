# SPDX-License-Identifier: GPL-2.0-only
"""Subsystem markers select what a change touches (README, "Adding a case").

A kernel developer who changed the VXLAN driver runs ``pytest -m vxlan``; that only works if
every case and every packetdrill script carries its subsystems, so this checks that no
collected item is left without one, and that a marker selects its own tests only. The trees
are collected the way a user selects (``--co -q -m ...``, in a fresh pytest) with
``--strict-markers``: a marker nobody registered, or a misspelt one, is then an error, not an
empty selection.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from netns.pytest_plugin import SUBSYSTEMS

REPO = Path(__file__).resolve().parents[2]
TREES = ("tests/cases", "tests/packetdrill")
ANY_SUBSYSTEM = " or ".join(SUBSYSTEMS)


def collect(expression: str) -> tuple[list[str], int]:
    """(selected node ids, deselected count) of ``-m expression`` over both trees."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
        + ["--strict-markers", "-m", expression, *TREES],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    # 5: nothing selected, which is what some of these selections want.
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr
    deselected = re.search(r"\((\d+) deselected\)", proc.stdout)
    selected = [line for line in proc.stdout.splitlines() if "::" in line]
    return selected, int(deselected[1]) if deselected else 0


def test_every_item_carries_a_subsystem_marker() -> None:
    unmarked, marked = collect(f"not ({ANY_SUBSYSTEM})")
    assert unmarked == [], 'give these a subsystem marker (README, "Adding a case")'
    assert marked > 100  # the trees were collected at all


def test_every_script_carries_the_packetdrill_marker() -> None:
    others, scripts = collect("not packetdrill")
    assert [nodeid for nodeid in others if ".pkt::" in nodeid] == []
    assert scripts > 50


def test_vxlan_selects_the_vxlan_cases_only() -> None:
    selected, _ = collect("vxlan")
    functions = {nodeid.partition("[")[0] for nodeid in selected}
    modules = {function.partition("::")[0] for function in functions}
    assert modules == {
        "tests/cases/test_c08_c09_flannel_vxlan.py",
        "tests/cases/test_c12_multi_ip_vtep.py",
        "tests/cases/test_c18_c21_c22_small.py",
        "tests/cases/test_c28_c29_vxlan_flood_ttl.py",
    }
    # The module of C18, C21 and C22 is vxlan's only where C22 is.
    small = sorted(f for f in functions if f.startswith("tests/cases/test_c18"))
    assert small == [
        "tests/cases/test_c18_c21_c22_small.py::test_c22_vxlan_local_selects_outer_source"
    ]


def test_a_script_carries_its_folders_subsystem() -> None:
    """encap/ is `tunnel`; negative/ is TCP's except its UDP scripts, which have entries of
    their own (tests/conftest.py)."""
    tunnel, _ = collect("packetdrill and tunnel")
    assert tunnel == ["tests/packetdrill/encap/ipip-gre-v4.pkt::ipv4"]
    udp, _ = collect("packetdrill and udp and not tcp")
    assert {nodeid.partition("::")[0] for nodeid in udp} == {
        "tests/packetdrill/udp/udp-exchange.pkt",
        "tests/packetdrill/udp/reconnect-after-disconnect.pkt",
        "tests/packetdrill/icmp/port-unreachable.pkt",
        "tests/packetdrill/negative/errno-without-note.pkt",
        "tests/packetdrill/negative/wrong-errno.pkt",
        "tests/packetdrill/negative/wrong-result.pkt",
    }
