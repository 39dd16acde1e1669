# SPDX-License-Identifier: GPL-2.0-only
"""Which runs a corpus asks for: every ``*.pkt`` under a folder, times its IP variants.

Two argument conventions exist. ``upstream`` is what google/packetdrill's ``run_all.py`` does
with its own corpus: naming alone picks the variants, and each variant passes its fixed
address set and ``-D`` defines (:mod:`packetdrill.conventions`). ``ours`` is what our pytest
plugin does with our corpus: the same arguments, but a ``--ip_version=`` line in the script pins
the variant, and the ``netregress:`` comment markers (expect-fail, skip-if-kernel-has) apply.
``kernel`` is what the kernel's ``ksft_runner.sh`` does with its selftest corpus: the runs and
arguments that corpus's own runner passes, learnt by running it (:mod:`kernels.corpus.runner`),
so a corpus of any kernel version is run as its own runner runs it.
"""

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from kernels.corpus.runner import Plan, RunnerProbe
from kernels.errors import KernelsError
from netregress.errors import NetregressError
from packetdrill.conventions import (
    COMMON_OPTIONS,
    EXPECT_FAIL,
    SKIP_IF_HAS,
    VARIANTS,
    args_to_options,
    upstream_variants,
    variants_for,
)
from packetdrill.errors import PacketdrillError
from packetdrill.loader import CliOptions, read_script

CONVENTIONS = ("upstream", "ours", "kernel")
# --ip-version choices → variants kept (of those the convention chooses for a script).
IP_VERSIONS: dict[str, tuple[str, ...]] = {
    "4": ("ipv4",),
    "6": ("ipv6",),
    "mapped": ("ipv4-mapped-ipv6",),
    "both": ("ipv4", "ipv6"),
    "all": tuple(VARIANTS),
}


class CorpusError(NetregressError):
    """Bad input: a missing corpus folder, an empty corpus, unusable extra arguments."""


@dataclass(frozen=True)
class Job:
    """One script under one variant: what both engines run, and how to read the result."""

    script: Path  # absolute
    name: str  # path relative to the corpus folder (the JSON key)
    variant: str
    options: CliOptions
    sha256: str
    expect_fail: str | None = None
    skip_if_has: tuple[str, ...] = ()
    not_run: str = ""  # why neither engine runs it (the kernel's runner refuses or skips it)

    @property
    def key(self) -> str:
        return f"{self.name} [{self.variant}]"


def script_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def find_jobs(
    corpus: Path,
    convention: str,
    ip_version: str,
    extra_args: str = "",
    variant_args: dict[str, str] | None = None,
) -> list[Job]:
    """Every run the corpus asks for, sorted by script then variant.

    ``extra_args`` is added to every run; ``variant_args`` replaces a variant's arguments
    (both in upstream's shell-word syntax, e.g. ``--mtu=1500 -D FOO=1``)."""
    if not corpus.is_dir():
        raise CorpusError(f"corpus folder not found: {corpus}")
    scripts = sorted(p for p in corpus.rglob("*.pkt") if p.is_file())
    if not scripts:
        raise CorpusError(f"no *.pkt scripts under {corpus}")
    extra = _options(extra_args, "--args")
    overrides = {v: _options(a, f"--variant-args {v}") for v, a in (variant_args or {}).items()}
    wanted = IP_VERSIONS[ip_version]
    plans = _kernel_plans(corpus, scripts) if convention == "kernel" else {}
    common = [] if convention == "kernel" else COMMON_OPTIONS
    jobs = []
    for script in scripts:
        text = _text(script)
        expect = EXPECT_FAIL.search(text) if convention == "ours" else None
        skip = SKIP_IF_HAS.search(text) if convention == "ours" else None
        digest = script_digest(script)
        name = str(script.relative_to(corpus))
        plan = plans.get(script)
        if plan is not None and (plan.refused or plan.skipped):
            why = f"refuses it: {plan.refused}" if plan.refused else f"skips it: {plan.skipped}"
            jobs.append(Job(script.resolve(), name, "runner", [], digest, not_run=why))
            continue
        for variant, base in _runs(convention, script, text, plan):
            if variant not in wanted:
                continue
            jobs.append(
                Job(
                    script.resolve(),
                    name,
                    variant,
                    (overrides.get(variant) or base) + common + extra,
                    digest,
                    expect.group(1) if expect else None,
                    tuple(skip.group(1).split()) if skip else (),
                )
            )
    return jobs


def _runs(
    convention: str, script: Path, text: str, plan: Plan | None
) -> list[tuple[str, CliOptions]]:
    """(variant, the variant's arguments) of every run the convention makes of one script."""
    if plan is not None:
        return [(run.variant, run.options) for run in plan.runs]
    variants = variants_for(script, text) if convention == "ours" else upstream_variants(script)
    return [(v, args_to_options(VARIANTS[v])) for v in variants]


def _kernel_plans(corpus: Path, scripts: list[Path]) -> dict[Path, Plan]:
    """What the corpus's own ``ksft_runner.sh`` runs for each script, as it runs without
    ``KSFT_MACHINE_SLOW`` (whose wider tolerance is ``--args=--tolerance_usecs=14000``)."""
    try:
        with RunnerProbe(corpus) as probe:
            return {script: probe.plan(script, slow=False) for script in scripts}
    except KernelsError as err:
        raise CorpusError(f"--conventions kernel: {err}") from None


def _text(script: Path) -> str:
    try:
        return read_script(str(script))
    except PacketdrillError:
        return ""  # unreadable as text: both engines report it; no markers to find


def _options(args: str, where: str) -> CliOptions:
    words = shlex.split(args)
    i = 0
    while i < len(words):
        if words[i] == "-D" and i + 1 < len(words) and "=" in words[i + 1]:
            i += 2
        elif words[i].startswith("--") and len(words[i]) > 2:
            i += 1
        else:
            raise CorpusError(
                f"{where}: expected --name[=value] and -D NAME=VALUE words, "
                f"got {words[i]!r} in: {args}"
            )
    return args_to_options(words)
