# SPDX-License-Identifier: GPL-2.0-only
"""A bisect over a distribution's packaged kernels: which kernel update changed a test's verdict.

The field question is "my service broke after last week's kernel update: which update?". The
archive keeps serving a series of builds per branch (kernels/acquire/debian_series.py); each
step boots one of them (no build), runs the selection with the matrix's runner and judges it
as `git bisect run` would (kernels/bisect/bisect.py's `verdict`): good, bad, or skip.

Why skip is never guessed: a build that cannot be fetched, fails the boot check, crashes or
hangs (unless `--crash-is-bad`), or runs none of the selected tests (a feature it lacks) says
nothing about the test. It is reported, and the search goes on around it; if only skipped
builds are left between the last of one verdict and the first of the other, all of them are
named as candidates, as git does.

Why both directions: the same search answers "which update broke it" (old good, new bad) and
"which update fixed it" (old bad, new good: the first packaged kernel carrying a fix). The two
ends are judged first and decide which it is.

Why no expectations in the guests: `kernels/expectations.toml` turns known failures into
strict xfails by version, so a verdict would follow the file rather than the kernel. Each
guest runs with an empty expectations file: pass is good, fail is bad.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernels.acquire.catalog import KernelSpec
from kernels.acquire.debian_series import Packaged
from kernels.acquire.fetch import fetch
from kernels.acquire.kernel import bzimage_banner
from kernels.bisect.bisect import ABORT, BAD, GOOD, verdict
from kernels.bisect.vmtest import failures
from kernels.corpus.source import guest_args
from kernels.errors import KernelsError
from kernels.matrix import reportlog
from kernels.matrix.results import UNEXPECTED, Outcome
from kernels.matrix.runner import KernelRun, RunOptions, run_kernel
from kernels.paths import REPO_ROOT
from kernels.progress import Status
from kernels.vm.session import VmSession
from netns.pytest_plugin import SUBSYSTEMS

NO_EXPECTATIONS = "# a release bisect judges raw verdicts: no expectations apply\n"


@dataclass(frozen=True)
class Judged:
    """One step: the build, its verdict (good, bad or skip), why, how long it took, and the
    subsystem markers of the tests that failed on it."""

    kernel: Packaged
    verdict: str
    why: str
    seconds: float
    subsystems: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()  # the node ids of the tests that failed


Judge = Callable[[Packaged], Judged]


@dataclass
class Search:
    """A finished search over `series` (oldest first): the steps in the order judged; `before`
    the last build with the old verdict, `after` the first with the new one; `between` the
    skipped builds between them, any of which may be the first with the new verdict."""

    series: list[Packaged]
    steps: list[Judged] = field(default_factory=list)
    before: Packaged | None = None
    after: Packaged | None = None
    between: list[Packaged] = field(default_factory=list)

    @property
    def old_verdict(self) -> str:
        """ "good" when the newer builds broke the test, "bad" when they fixed it."""
        return next(step.verdict for step in self.steps if step.kernel == self.before)

    def subsystems(self) -> tuple[str, ...]:
        """The subsystem markers of the tests that failed, on whichever side failed."""
        return tuple(dict.fromkeys(s for step in self.steps for s in step.subsystems))

    def failed(self) -> tuple[str, ...]:
        """The node ids of the tests that failed, on whichever side failed."""
        return tuple(dict.fromkeys(t for step in self.steps for t in step.failed))


def _next(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The untested build nearest the middle of (lo, hi), or None when none is left."""
    left = [i for i in range(lo + 1, hi) if i not in skipped]
    middle = (lo + hi) / 2
    return min(left, key=lambda i: (abs(i - middle), i)) if left else None


def search(series: list[Packaged], old: int, new: int, judge: Judge, say: Status) -> Search:
    """Judge both ends (indexes of `series`, `old` < `new`), then halve the range between
    them until the build where the verdict changes is found."""
    result = Search(series)

    def step(index: int) -> str:
        judged = judge(series[index])
        result.steps.append(judged)
        say(f"step {len(result.steps)}: {judged.kernel.abi} ({judged.kernel.version}): "
            f"{judged.verdict}: {judged.why} ({judged.seconds:.0f} s)")  # fmt: skip
        return judged.verdict

    ends = {index: step(index) for index in (old, new)}
    for index, got in ends.items():
        if got not in ("good", "bad"):
            raise KernelsError(
                f"{series[index].abi} ({series[index].version}) bounds the range but cannot "
                f"be judged ({result.steps[-2 if index == old else -1].why}): choose another "
                "--good/--bad"
            )
    if ends[old] == ends[new]:
        raise KernelsError(
            f"both ends are {ends[old]}: {series[old].abi} ({series[old].version}) and "
            f"{series[new].abi} ({series[new].version}); no packaged kernel between them "
            "changed the verdict"
        )
    lo, hi, skipped = old, new, set[int]()
    while (pick := _next(lo, hi, skipped)) is not None:
        index = pick
        got = step(index)
        if got == "skip":
            skipped.add(index)
        elif got == ends[old]:
            lo = index
        else:
            hi = index
    result.before, result.after = series[lo], series[hi]
    result.between = [series[i] for i in sorted(skipped) if lo < i < hi]
    return result


def failed_tests(run: KernelRun) -> tuple[str, ...]:
    """The node ids of the tests that failed in `run` (the outcomes `verdict` calls bad)."""
    return tuple(r.nodeid for r in run.results if r.outcome in (*UNEXPECTED, Outcome.XFAIL))


def failing_subsystems(run: KernelRun, failed: tuple[str, ...]) -> tuple[str, ...]:
    """The subsystem markers (SUBSYSTEMS) of the `failed` tests of `run`, read from the
    reports its guest wrote (their keywords hold the markers)."""
    if not failed:
        return ()
    log = reportlog.read(run.out_dir)
    found = {
        word
        for nodeid in failed
        for report in log.reports.get(nodeid, [])
        for word in report.keywords
        if word in SUBSYSTEMS
    }
    return tuple(sorted(found))


@dataclass(frozen=True)
class RealJudge:
    """The judge that boots: fetch the build (`spec_of` names it for the catalog), check its
    image boots at all (the x86 boot header), run the selection in a guest of `vm`."""

    spec_of: Callable[[Packaged], KernelSpec]
    pytest_args: list[str]
    accel: str
    crash_is_bad: bool
    out: Path
    vm: VmSession
    status: Status

    def __call__(self, kernel: Packaged) -> Judged:
        start = time.monotonic()
        spec = self.spec_of(kernel)

        def judged(
            word: str, why: str, failed: tuple[str, ...] = (), marks: tuple[str, ...] = ()
        ) -> Judged:
            return Judged(kernel, word, why, time.monotonic() - start, marks, failed)

        try:
            bootable = fetch(spec, self.status)
            if bootable.image is not None:
                bzimage_banner(bootable.image)
        except KernelsError as exc:
            return judged("skip", f"not bootable: {exc}")
        args = guest_args(self.pytest_args, spec, self.status)  # an error here is the harness'
        out = self.out / kernel.abi
        out.mkdir(parents=True, exist_ok=True)
        (out / "expectations.toml").write_text(NO_EXPECTATIONS)
        options = RunOptions(pytest_args=args, cwd=REPO_ROOT, accel=self.accel,
                             expectations=out / "expectations.toml")  # fmt: skip
        run = run_kernel(spec, options, out / "run", self.vm.launcher, self.vm.children,
                         self.status)  # fmt: skip
        code, why = verdict(run, self.crash_is_bad)
        if code == ABORT:
            raise KernelsError(f"{kernel.abi}: {why}")  # the harness, not the kernel
        if code != BAD:
            return judged({GOOD: "good"}.get(code, "skip"), why)
        if lines := failures(run):
            # The first failure's own words: a reader must see a failure the host caused
            # (a library replaced under the guest's share) apart from the kernel's.
            why = f"failed: {lines[0][:300]}" + (f" (+{len(lines) - 1} more)" if lines[1:] else "")
        failed = failed_tests(run)
        return judged("bad", why, failed, failing_subsystems(run, failed))
