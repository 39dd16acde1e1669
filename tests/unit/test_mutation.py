# SPDX-License-Identifier: GPL-2.0-only
"""scripts/mutants: the verdicts (killed, crashed, survived, stillborn) against the control, a
kill that must repeat, resume, --revert, and the reports, with a fake build and a fake run
(a real campaign builds and boots kernels: tests/unit/test_mutation_loop.py and the note)."""

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from kernels.acquire.from_source.builder import BuildRequest, BuiltKernel
from kernels.acquire.from_source.patches import Patch, sync_patches
from kernels.acquire.from_source.source import SourceTree
from kernels.errors import KernelsError
from kernels.matrix.results import TestResult
from kernels.matrix.runner import KernelRun
from kernels.mutation import campaign as campaign_module
from kernels.mutation.campaign import Campaign, Record, Stop, run_campaign
from kernels.mutation.classify import classify, confirmed, control_problems
from kernels.mutation.mutant import read_mutant, read_revert, read_set, result_key
from kernels.mutation.report import combine, load, markdown, score, write
from kernels.vm.console import Crash

DIFF = "--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
GOOD = [TestResult("t::a", "pass"), TestResult("t::b[broken-x]", "xfail", "oracle fails")]


def _write(folder: Path, name: str, head: str) -> Path:
    path = folder / f"{name}.patch"
    path.write_text(head + "\n\n" + DIFF)
    return path


def test_a_mutant_file_names_its_behaviour_subsystem_and_shape(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "tcp-01-x",
        "Nagle ignores NODELAY.\nSubsystem: tcp-output\nRegression shape: condition dropped",
    )
    mutant = read_mutant(path)
    assert (mutant.name, mutant.behaviour, mutant.subsystem) == (
        "tcp-01-x",
        "Nagle ignores NODELAY.",
        "tcp-output",
    )
    assert mutant.shape == "condition dropped" and mutant.diff == DIFF
    assert not mutant.patch.reverse


def test_a_mutant_without_its_sentence_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bare.patch"
    path.write_text(DIFF)
    with pytest.raises(KernelsError, match="first line says"):
        read_mutant(path)
    with pytest.raises(KernelsError, match="no mutant file"):
        read_set([tmp_path / "missing"])


def test_a_reverted_fix_is_carried_backwards(tmp_path: Path) -> None:
    """--revert: the fix's diff applied in reverse puts the bug back; undoing it re-applies
    the fix, through the build's own patch bookkeeping."""
    fix = tmp_path / "0001-fix.patch"
    fix.write_text("From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH net] tcp: fix b\n\n" + DIFF)
    mutant = read_revert(fix)
    assert mutant.patch.reverse and "tcp: fix b" in mutant.behaviour
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.c").write_text("a\nB\nc\n")  # the fixed source
    record = tmp_path / "applied.json"
    sync_patches(tree, record, [mutant.patch], lambda _: None)
    assert (tree / "f.c").read_text() == "a\nb\nc\n"  # the bug is back
    sync_patches(tree, record, [], lambda _: None)
    assert (tree / "f.c").read_text() == "a\nB\nc\n"


def test_verdicts_against_the_control() -> None:
    failed = [TestResult("t::a", "fail", "assert 1 == 2"), GOOD[1]]
    killed = classify(GOOD, failed)
    assert killed.outcome == "killed" and killed.kills[0].how == "failed"
    xpass = [GOOD[0], TestResult("t::b[broken-x]", "fail", "[XPASS(strict)] broken")]
    assert classify(GOOD, xpass).kills[0].how == "broken variant passed"
    assert classify(GOOD, GOOD).outcome == "survived"
    skipped = [TestResult("t::a", "skip", "kernel lacks x"), GOOD[1]]
    survived = classify(GOOD, skipped)
    assert survived.outcome == "survived" and survived.changed == ("t::a: pass → skip",)
    crashed = classify(GOOD, [GOOD[0]], ("Kernel panic", "console lines"))
    assert (crashed.outcome, crashed.reason) == ("crashed", "Kernel panic")
    blamed = classify(GOOD, [TestResult("t::b[broken-x]", "crash", "hang", "console")])
    assert blamed.outcome == "crashed" and "t::b[broken-x]" in blamed.reason


def test_a_test_that_fails_on_the_control_kills_nothing() -> None:
    control = [TestResult("t::a", "fail", "flaky"), GOOD[1]]
    assert classify(control, [TestResult("t::a", "fail", "again"), GOOD[1]]).outcome == "survived"
    assert control_problems(control, None) == ["t::a: fail: flaky"]
    assert control_problems([TestResult("t::a", "skip")], None)[-1].startswith("no selected test")
    assert control_problems(GOOD, "Kernel panic") == ["kernel problem: Kernel panic"]
    assert control_problems(GOOD, None) == []


def test_a_kill_must_repeat_while_the_control_passes() -> None:
    verdict = classify(GOOD, [TestResult("t::a", "fail", "once"), GOOD[1]])
    twice, control_ok = [TestResult("t::a", "fail", "twice")], [TestResult("t::a", "pass")]
    assert confirmed(verdict, twice, control_ok).outcome == "killed"
    lost = confirmed(verdict, [TestResult("t::a", "pass")], control_ok)
    assert lost.outcome == "survived" and "passed its re-run" in lost.changed[-1]
    # a loaded machine fails the test on any kernel: not the mutation's doing
    flaky_here = confirmed(verdict, twice, [TestResult("t::a", "fail", "late")])
    assert flaky_here.outcome == "survived" and "control too" in flaky_here.changed[-1]


def test_result_keys_change_with_patch_selection_and_source() -> None:
    one, two = Patch("m.patch", DIFF), Patch("m.patch", DIFF.replace("B", "C"))
    base = result_key("src", one, ["tests/cases"])
    assert base == result_key("src", one, ["tests/cases"])
    reverse = Patch("m.patch", DIFF, reverse=True)
    others = [
        result_key("src", two, ["tests/cases"]),
        result_key("src", one, ["-k", "x"]),
        result_key("other", one, ["tests/cases"]),
        result_key("src", None, ["tests/cases"]),
        result_key("src", reverse, ["tests/cases"]),
    ]
    assert len({base, *others}) == 6


class FakeKernels:
    """Builds are names; a run's results follow the mutant's name (the behaviour it breaks)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.built: list[str] = []
        self.runs: list[tuple[str, list[str]]] = []
        self.control = GOOD
        self.control_fails_once = False

    def build(self, request: BuildRequest) -> BuiltKernel:
        name = request.result_name()
        self.built.append(name)
        if "stillborn" in name:
            raise KernelsError("make failed:\nnet/ipv4/tcp.c:1: error: expected ';'")
        return BuiltKernel(name, self.tmp / "bzImage", self.tmp / "mods", "6.1.0", 60.0)

    def run(self, built: BuiltKernel, tests: list[str]) -> KernelRun:
        self.runs.append((built.name, tests))
        run = KernelRun(built.name, self.tmp, total_seconds=90.0)
        if "killer" in built.name:
            run.results = [TestResult("t::a", "fail", "assert 3 == 4"), GOOD[1]]
        elif "flaky" in built.name:
            first = not any(name == built.name for name, _ in self.runs[:-1])
            run.results = [TestResult("t::a", "fail" if first else "pass", "x"), GOOD[1]]
        elif "crasher" in built.name:
            run.results = [GOOD[0]]
            run.problem = Crash("Kernel panic - not syncing", "RIP: tcp_ack")
        elif built.name.endswith("control") and self.control_fails_once and tests == ["t::a"]:
            run.results = [GOOD[0]]  # the re-run of the one failed test, alone
        else:
            run.results = list(self.control if built.name.endswith("control") else GOOD)
        return run


def _campaign(tmp_path: Path, fake: FakeKernels, names: list[str]) -> Campaign:
    folder = tmp_path / "mutants"
    folder.mkdir(exist_ok=True)
    for name in names:
        _write(folder, name, f"Breaks {name}.\nSubsystem: {name.split('-')[0]}")
    source = SourceTree("linux-source-6.1", tmp_path, owned=True, origin="test")
    return Campaign(source, read_set([folder]), ["tests/cases"], tmp_path / "out",
                    fake.build, fake.run, lambda _: None)  # fmt: skip


def test_a_campaign_judges_every_mutant_and_resumes(tmp_path: Path) -> None:
    fake = FakeKernels(tmp_path)
    names = [
        "tcp-1-killer",
        "tcp-2-flaky",
        "vxlan-3-crasher",
        "vxlan-4-quiet",
        "bridge-5-stillborn",
    ]
    records = run_campaign(_campaign(tmp_path, fake, names))
    outcomes = {r.name: r.outcome for r in records}
    assert outcomes == {
        "control": "control", "tcp-1-killer": "killed", "tcp-2-flaky": "survived",
        "vxlan-3-crasher": "crashed", "vxlan-4-quiet": "survived",
        "bridge-5-stillborn": "stillborn",
    }  # fmt: skip
    assert ("mutant-tcp-1-killer", ["t::a"]) in fake.runs  # the kill was re-run before it counted
    assert ("mutant-control", ["t::a"]) in fake.runs  # and the control ran it again too
    assert fake.built[0] == "mutant-control"
    assert score(records).text().startswith("50 % caught (2 of 4")
    paths = write(records, tmp_path / "out", 600.0)
    assert "**unexplained survivor**" in paths[0].read_text()
    assert json.loads(paths[1].read_text())["score"]["stillborn"] == 1
    assert "Kernel panic" in paths[2].read_text()
    # run again: every result is stored, nothing is built or run
    fake.built.clear()
    fake.runs.clear()
    again = run_campaign(_campaign(tmp_path, fake, names))
    assert [r.outcome for r in again] == [r.outcome for r in records]
    assert fake.built == [] and fake.runs == []


def test_an_edited_suite_measures_the_control_again_and_fresh_judges_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new test needs a baseline: the control runs again. A stored mutant stays stored until
    asked (`fresh`), the way a survivor is re-judged once a new test exists."""
    fake = FakeKernels(tmp_path)
    run_campaign(_campaign(tmp_path, fake, ["tcp-1-killer"]))
    monkeypatch.setattr(campaign_module, "suite_print", lambda: "another suite")
    fake.built.clear()
    again = run_campaign(_campaign(tmp_path, fake, ["tcp-1-killer"]))
    assert fake.built == ["mutant-control"]
    assert again[0].suite == "another suite" and again[1].suite != "another suite"
    fake.built.clear()
    fresh = Campaign(**{**vars(_campaign(tmp_path, fake, ["tcp-1-killer"])), "fresh": True})
    assert run_campaign(fresh)[1].suite == "another suite"
    assert fake.built == ["mutant-tcp-1-killer", "mutant-control"]  # the control for the re-run


def test_an_unclean_control_stops_the_campaign(tmp_path: Path) -> None:
    fake = FakeKernels(tmp_path)
    fake.control = [TestResult("t::a", "fail", "assert 0"), GOOD[1]]
    with pytest.raises(Stop, match=r"(?s)control .* is not clean.*t::a: fail"):
        run_campaign(_campaign(tmp_path, fake, ["tcp-1-killer"]))
    assert fake.built == ["mutant-control"]


def test_a_control_test_that_passes_alone_is_flaky_and_kills_nothing(tmp_path: Path) -> None:
    """One timing hiccup on the control does not void a campaign, and the test it hit cannot
    kill: it stays a failure in the baseline, named in the report."""
    fake = FakeKernels(tmp_path)
    fake.control = [TestResult("t::a", "fail", "timing"), GOOD[1]]
    fake.control_fails_once = True
    records = run_campaign(_campaign(tmp_path, fake, ["tcp-1-killer"]))
    assert ("mutant-control", ["t::a"]) in fake.runs
    assert [r.outcome for r in records] == ["control", "survived"]
    assert records[0].changed == ["t::a: failed, passed its re-run: cannot kill"]
    assert "Flaky on the control" in write(records, tmp_path / "out", 60.0)[0].read_text()


def test_an_explained_survivor_is_not_counted(tmp_path: Path) -> None:
    fake = FakeKernels(tmp_path)
    folder = tmp_path / "mutants"
    folder.mkdir()
    _write(
        folder,
        "routing-1-quiet",
        "Breaks x.\nSubsystem: routing\nSurvivor: equivalent: the value is recomputed",
    )
    source = SourceTree("linux-source-6.1", tmp_path, owned=True, origin="test")
    campaign = Campaign(
        source, read_set([folder]), ["t"], tmp_path / "out", fake.build, fake.run, lambda _: None
    )
    records = run_campaign(campaign)
    assert score(records).excused == 1 and score(records).percent is None
    assert "equivalent: the value is recomputed" in markdown(records, 1.0)


def test_a_narrowed_mutant_runs_its_subsystems_tests_judged_by_the_whole_control(
    tmp_path: Path,
) -> None:
    fake = FakeKernels(tmp_path)
    campaign = _campaign(tmp_path, fake, ["tcp-1-killer", "vxlan-2-quiet"])
    narrowed = Campaign(**{**vars(campaign), "narrow": {"tcp": "tcp"}})
    records = run_campaign(narrowed)
    runs = dict((name, tests) for name, tests in fake.runs if tests != ["t::a"])  # not re-runs
    assert runs["mutant-control"] == ["tests/cases"]
    assert runs["mutant-tcp-1-killer"] == ["tests/cases", "-m", "tcp"]
    assert runs["mutant-vxlan-2-quiet"] == ["tests/cases"]
    assert [r.selection for r in records[1:]] == [["tests/cases", "-m", "tcp"], ["tests/cases"]]


def test_campaigns_combine_into_before_and_after(tmp_path: Path) -> None:
    """The curated set, then a campaign of new tests for its survivors: each mutant keeps its
    strongest verdict and every kill; the first campaign's score is 'before'."""
    fake = FakeKernels(tmp_path)
    first = run_campaign(_campaign(tmp_path, fake, ["tcp-1-killer", "vxlan-2-quiet"]))
    for folder in ("one", "two", "all"):
        (tmp_path / folder).mkdir()
    write(first, tmp_path / "one", 1.0)
    fake.control = GOOD
    later = [Record(**{**asdict(r), "outcome": "killed",
                       "kills": [{"nodeid": "t::new", "how": "failed", "message": "x"}]})
             if r.name == "vxlan-2-quiet" else r for r in first]  # fmt: skip
    write(later, tmp_path / "two", 1.0)
    merged = combine([load(tmp_path / "one"), load(tmp_path / "two")])
    assert {r.name: r.outcome for r in merged} == {
        "control": "control", "tcp-1-killer": "killed", "vxlan-2-quiet": "killed",
    }  # fmt: skip
    assert score(load(tmp_path / "one")).percent == 50.0 and score(merged).percent == 100.0
    paths = write(merged, tmp_path / "all", 0.0, before=score(load(tmp_path / "one")))
    assert "Before the later campaigns: 50 % caught" in paths[0].read_text()
    with pytest.raises(KernelsError, match="not a campaign's report"):
        load(tmp_path / "missing")
