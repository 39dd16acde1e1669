# SPDX-License-Identifier: GPL-2.0-only
"""Which runs a corpus asks for: every ``*.pkt`` under a folder, times its IP variants.

Two argument conventions exist. ``upstream`` is what google/packetdrill's ``run_all.py`` does
with its own corpus: naming alone picks the variants, and each variant passes its fixed
address set and ``-D`` defines (:mod:`..variants`). ``ours`` is what our pytest plugin does
with our corpus: the same arguments, but a ``--ip_version=`` line in the script pins the
variant, and the ``netregress:`` comment markers (expect-fail, skip-if-kernel-has) apply.
``kernel`` is what the kernel's ``ksft_runner.sh`` does with its selftest corpus: its own
address sets and defines, a ``--ip_version=`` line picks the variant, else all three run.
"""

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from netregress.errors import NetregressError

from ..errors import PacketdrillError
from ..loader import CliOptions, read_script
from ..variants import (
    COMMON_OPTIONS,
    EXPECT_FAIL,
    KERNEL_VARIANTS,
    SKIP_IF_HAS,
    VARIANTS,
    args_to_options,
    kernel_variants,
    upstream_variants,
    variants_for,
)

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
    table, common = (KERNEL_VARIANTS, []) if convention == "kernel" else (VARIANTS, COMMON_OPTIONS)
    jobs = []
    for script in scripts:
        text = _text(script)
        variants = _variants(convention, script, text)
        expect = EXPECT_FAIL.search(text) if convention == "ours" else None
        skip = SKIP_IF_HAS.search(text) if convention == "ours" else None
        digest = script_digest(script)
        for variant in (v for v in variants if v in wanted):
            base = overrides.get(variant) or args_to_options(table[variant])
            jobs.append(
                Job(
                    script.resolve(),
                    str(script.relative_to(corpus)),
                    variant,
                    base + common + extra,
                    digest,
                    expect.group(1) if expect else None,
                    tuple(skip.group(1).split()) if skip else (),
                )
            )
    return jobs


def _variants(convention: str, script: Path, text: str) -> list[str]:
    if convention == "kernel":
        return [v for v in kernel_variants(text) if v in KERNEL_VARIANTS]
    return variants_for(script, text) if convention == "ours" else upstream_variants(script)


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
