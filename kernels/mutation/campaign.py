# SPDX-License-Identifier: GPL-2.0-only
"""A mutation campaign: the control, then each mutant built, booted, tested and judged.

Why one shared build dir and one mutant at a time: the source tree carries exactly one mutant
(the previous one is undone by :func:`sync_patches`), so each build is incremental, a minute
or two instead of a cold build. Tests never run while the next kernel builds: a starved TCG
guest would turn timing oracles into noise, and a noisy kill is not a kill.

Why results are stored one file per mutant as soon as it is judged: a campaign takes hours; an
interrupted one, run again with the same output dir, resumes where it stopped. A stored
result is reused only for the same source, patch and selection; each records the suite it
was measured with (:func:`suite_print`). The control is measured again whenever the suite
changed (a new test has no baseline otherwise); a mutant is judged again when asked
(`fresh`), e.g. to prove that a new test kills a survivor.
"""

import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernels.acquire.from_source.builder import BuildRequest, BuiltKernel
from kernels.acquire.from_source.make import elapsed
from kernels.acquire.from_source.source import SourceTree
from kernels.errors import KernelsError
from kernels.matrix.results import Outcome, TestResult
from kernels.matrix.runner import KernelRun
from kernels.mutation.classify import Verdict, classify, confirmed, control_problems
from kernels.mutation.mutant import Mutant, result_key
from kernels.paths import REPO_ROOT
from kernels.progress import Status

# What a stored result depends on besides its patch: the tests and everything they run on.
SUITE_PARTS = ("tests", "netns", "packetdrill", "netregress", "kernels/expectations.toml")
CONTROL = "control"

Runner = Callable[[BuiltKernel, list[str]], KernelRun]
Builder = Callable[[BuildRequest], BuiltKernel]


@dataclass
class Record:
    """One judged mutant (or the control) as stored and reported."""

    name: str
    behaviour: str
    subsystem: str
    shape: str
    key: str
    outcome: str
    kills: list[dict[str, str]] = field(default_factory=list)
    reason: str = ""
    excerpt: str = ""
    changed: list[str] = field(default_factory=list)
    diff: str = ""
    release: str = ""
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    survivor: str = ""  # the file's `Survivor:` line: why a survivor is equivalent / unobservable
    selection: list[str] = field(default_factory=list)  # the pytest arguments it ran
    suite: str = ""  # suite_print() when it was measured
    upstream: str = ""  # a mined mutant's `Upstream:` line: the real change it reverts
    range: str = ""  # a mined mutant's `Range:` line: the two versions it was mined from

    @classmethod
    def load(cls, path: Path) -> "Record":
        return cls(**json.loads(path.read_text()))


@dataclass(frozen=True)
class Campaign:
    """What to run: the source, the mutants, the selection; where results go; how to build/run."""

    source: SourceTree
    mutants: list[Mutant]
    selection: list[str]
    out: Path
    builder: Builder
    runner: Runner
    status: Status
    confirm: bool = True
    overlap: bool = True  # build the next mutant while the guest runs this one
    narrow: dict[str, str] = field(default_factory=dict)  # subsystem → pytest -m expression
    fresh: bool = False  # judge every mutant again, stored results or not

    def selection_for(self, mutant: Mutant) -> list[str]:
        """The control runs the whole selection; a mutant whose subsystem is in `narrow` runs
        only the part marked for it (the control's results for the same tests judge it)."""
        expression = self.narrow.get(mutant.subsystem)
        return [*self.selection, "-m", expression] if expression else self.selection


def suite_print(root: Path = REPO_ROOT) -> str:
    """A digest of the suite's files (tests, library, engine, expectations): part of every
    result's key, so results measured with other tests are not reused."""
    digest = hashlib.sha256()
    for part in SUITE_PARTS:
        base = root / part
        files = sorted(base.rglob("*")) if base.is_dir() else [base]
        for path in files:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _results_dir(out: Path) -> Path:
    path = out / "results"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _record(mutant: Mutant | None, key: str, verdict: Verdict, built: BuiltKernel | None,
            run: KernelRun | None) -> Record:  # fmt: skip
    return Record(
        name=mutant.name if mutant else CONTROL,
        behaviour=mutant.behaviour if mutant else "The unpatched kernel.",
        subsystem=mutant.subsystem if mutant else "",
        shape=mutant.shape if mutant else "",
        key=key,
        outcome=verdict.outcome,
        kills=[asdict(kill) for kill in verdict.kills],
        reason=verdict.reason,
        excerpt=verdict.excerpt,
        changed=list(verdict.changed),
        diff=mutant.diff if mutant else "",
        release=built.release if built else "",
        build_seconds=round(built.seconds, 1) if built else 0.0,
        run_seconds=round(run.total_seconds, 1) if run else 0.0,
        survivor=mutant.survivor if mutant else "",
        upstream=mutant.upstream if mutant else "",
        range=mutant.range if mutant else "",
    )


class Stop(KernelsError):
    """The campaign cannot go on (the control is not clean, or a guest could not start)."""


class _Builds:
    """Builds in the order the campaign needs them, at most one ahead of the guest that runs.

    Why ahead: the build of the next mutant (niced, mostly the single-threaded vmlinux link)
    takes the core the TCG guest leaves idle, so a mutant costs its guest run, not build plus
    run. The control runs under the same overlap as the mutants, and every kill must repeat.
    """

    def __init__(self, campaign: Campaign) -> None:
        self._campaign = campaign
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="build")
        self._ahead: dict[str, Future[BuiltKernel]] = {}
        self._control: BuiltKernel | None = None

    def _submit(self, mutant: Mutant | None, ahead: bool = False) -> Future[BuiltKernel]:
        """A build made ahead leaves one CPU to the guest (make -j one less)."""
        name = f"mutant-{mutant.name if mutant else CONTROL}"
        patches = (mutant.patch,) if mutant else ()
        cpus = os.cpu_count() or 1
        jobs = max(1, cpus - 1) if ahead else cpus
        request = BuildRequest(self._campaign.source, patches=patches, name=name, jobs=jobs)
        return self._pool.submit(self._campaign.builder, request)

    def prefetch(self, mutant: Mutant | None) -> None:
        if self._campaign.overlap and mutant is not None and mutant.name not in self._ahead:
            self._ahead[mutant.name] = self._submit(mutant, ahead=True)

    def control(self) -> BuiltKernel:
        """The unpatched kernel (a stored build of it is reused, so this costs no build)."""
        if self._control is None:
            self._control = self.get(None)
        return self._control

    def get(self, mutant: Mutant | None) -> BuiltKernel:
        """The built kernel, or the build's KernelsError raised here."""
        future = self._ahead.pop(mutant.name, None) if mutant else None
        return (future or self._submit(mutant)).result()

    def close(self) -> None:
        """Builds not started are dropped; one under way finishes (make is incremental, so the
        next campaign starts from where it got)."""
        if any(future.running() for future in self._ahead.values()):
            self._campaign.status("waiting for the build under way to finish")
        self._pool.shutdown(wait=True, cancel_futures=True)


def run_control(
    campaign: Campaign, suite: str, builds: _Builds, first: Mutant | None
) -> tuple[Record, list[TestResult]]:
    """Build and run the unpatched source (again whenever the suite changed); refuse to go on
    unless it is clean."""
    key = result_key(campaign.source.id, None, [*campaign.selection, suite])
    stored = _results_dir(campaign.out) / f"{CONTROL}-{key}.json"
    results_file = stored.with_suffix(".results.json")
    if stored.is_file() and results_file.is_file():
        campaign.status("control: stored result reused")
        results = [TestResult.from_dict(item) for item in json.loads(results_file.read_text())]
        return Record.load(stored), results
    campaign.status("control: building the unpatched source")
    built = builds.control()
    builds.prefetch(first)
    campaign.status(f"control: built {built.release} in {elapsed(built.seconds)}; running")
    run = campaign.runner(built, campaign.selection)
    problem = run.problem.reason if run.problem else None
    problems = control_problems(run.results, problem)
    flaky = _flaky_on_control(campaign, built, run) if problems and problem is None else []
    if flaky:
        problems = []
    if problems:
        raise Stop(
            "the control (the unpatched kernel) is not clean, so no mutant can be judged "
            "against it:\n  " + "\n  ".join(problems[:20])
            + f"\n(its run: {run.out_dir})"
        )  # fmt: skip
    record = _record(None, key, Verdict("survived"), built, run)
    record.outcome = "control"
    record.changed = [f"{nodeid}: failed, passed its re-run: cannot kill" for nodeid in flaky]
    record.selection = campaign.selection
    record.suite = suite
    results_file.write_text(json.dumps([asdict(r) for r in run.results]))
    stored.write_text(json.dumps(asdict(record), indent=1))
    return record, run.results


def _flaky_on_control(campaign: Campaign, built: BuiltKernel, run: KernelRun) -> list[str]:
    """The control's failed tests if every one passes when run again alone, else ``[]``.

    Why not stop at once: on a loaded machine a timing check fails now and then on any kernel,
    and one such failure would void a whole campaign. Such a test stays a failure in the
    baseline, so it cannot kill a mutant (:func:`classify` needs a difference from the
    control); the campaign says which tests these were instead of quietly dropping them."""
    failed = [r.nodeid for r in run.results if r.outcome == Outcome.FAIL]
    if not failed or any(r.outcome == Outcome.CRASH for r in run.results):
        return []
    campaign.status(f"control: {len(failed)} test(s) failed; running them once more")
    again = campaign.runner(built, failed)
    passed = {r.nodeid for r in again.results if r.outcome in (Outcome.PASS, Outcome.XFAIL)}
    return failed if again.problem is None and passed >= set(failed) else []


def judge(
    campaign: Campaign,
    mutant: Mutant,
    control: list[TestResult],
    key: str,
    builds: _Builds,
    after: Mutant | None = None,
) -> Record:
    """Build (or take the build made ahead), boot and test one mutant, and start building the
    one `after` it; a verdict against the control. Not stored here."""
    start = time.monotonic()
    try:
        built = builds.get(mutant)
    except KernelsError as exc:
        builds.prefetch(after)
        text = str(exc)
        verdict = Verdict("stillborn", reason=text.splitlines()[0], excerpt=text)
        record = _record(mutant, key, verdict, None, None)
        record.build_seconds = round(time.monotonic() - start, 1)
        return record
    builds.prefetch(after)
    campaign.status(f"{mutant.name}: built in {elapsed(built.seconds)}; running")
    run = campaign.runner(built, campaign.selection_for(mutant))
    if run.problem is not None and run.problem.reason.startswith("cannot run"):
        raise Stop(f"{mutant.name}: {run.problem.reason}")
    if run.problem is None and not run.results:
        raise Stop(
            f"{mutant.name}: its selection ran no test "
            f"({' '.join(campaign.selection_for(mutant))}): a narrowing that selects nothing "
            f"would let every mutant of its subsystem survive"
        )
    crash = (run.problem.reason, run.problem.excerpt) if run.problem else None
    verdict = classify(control, run.results, crash)
    if campaign.confirm and verdict.outcome == "killed":
        killers = [kill.nodeid for kill in verdict.kills]
        campaign.status(
            f"{mutant.name}: killed; re-running {len(killers)} killing test(s) on it and on "
            f"the control"
        )
        again = campaign.runner(built, killers)
        on_control = campaign.runner(builds.control(), killers)
        verdict = confirmed(verdict, again.results, on_control.results)
    record = _record(mutant, key, verdict, built, run)
    record.selection = campaign.selection_for(mutant)
    return record


def run_campaign(campaign: Campaign) -> list[Record]:
    """The control first, then every mutant (stored ones reused); every record, control first.
    The tree keeps the last mutant applied: the next build of it (stock or another patch set)
    undoes it first, as every build does."""
    suite = suite_print()
    keys = {
        m.name: result_key(campaign.source.id, m.patch, campaign.selection_for(m))
        for m in campaign.mutants
    }
    stored = {m.name: _results_dir(campaign.out) / f"{m.name}-{keys[m.name]}.json"
              for m in campaign.mutants}  # fmt: skip
    todo = [m for m in campaign.mutants if campaign.fresh or not stored[m.name].is_file()]
    upcoming = {m.name: after for m, after in zip(todo, [*todo[1:], None], strict=False)}
    builds = _Builds(campaign)
    try:
        control, baseline = run_control(campaign, suite, builds, next(iter(todo), None))
        records = [control]
        for number, mutant in enumerate(campaign.mutants, 1):
            prefix = f"[{number}/{len(campaign.mutants)}] {mutant.name}"
            path = stored[mutant.name]
            if mutant not in todo:
                record = Record.load(path)
                campaign.status(f"{prefix}: {record.outcome} (stored)")
            else:
                campaign.status(f"{prefix}: {mutant.behaviour}")
                record = judge(campaign, mutant, baseline, keys[mutant.name], builds,
                               upcoming[mutant.name])  # fmt: skip
                record.suite = suite
                path.write_text(json.dumps(asdict(record), indent=1))
                campaign.status(f"{prefix}: {record.outcome} ({_how(record)})")
            records.append(record)
    finally:
        builds.close()
    return records


def _how(record: Record) -> str:
    if record.kills:
        first = record.kills[0]
        more = f" and {len(record.kills) - 1} more" if len(record.kills) > 1 else ""
        return f"{first['nodeid']} {first['how']}{more}"
    return record.reason or f"build {record.build_seconds:.0f} s, run {record.run_seconds:.0f} s"
