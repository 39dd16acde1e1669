# SPDX-License-Identifier: GPL-2.0-only
"""The C helpers of the network selftests (``nettest``, ``udpgso``, ``cmsg_sender``, …), built
from the same tree as the scripts, once per tree.

Why the tree's own headers: the helpers use the uAPI of their kernel (new socket options,
netlink attributes), so ``make headers_install`` installs the tree's headers into its
``usr/include``, where the selftests' Makefiles look first; the machine's linux-libc-dev would
be as old as its distribution. ``make -k`` builds what it can: a helper needing clang (the
``*.bpf.o`` programs), a YNL code generator or a library the machine lacks is left out, and
named with the first error that stopped it, so a script needing it is explained, not
mysterious. The result is written beside the net folder (``.netregress-helpers.json``), and a
second session (or a VM guest, which has no compiler) reads it back.
"""

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernels.errors import KernelsError
from kernels.paths import locked
from kernels.progress import Status

RECORD = ".netregress-helpers.json"
BUILD_LOG = ".netregress-build.log"
_GENERATED = ("TEST_GEN_FILES", "TEST_GEN_PROGS")
# The YNL programs: their libynl is generated from Documentation/netlink/specs by a Python
# generator that ran for minutes without an end on Debian 12 (7.2's tree); left out, named.
_YNL = ("YNL_GEN_FILES", "YNL_GEN_PROGS")
_NO_YNL = [f"{variable}=" for variable in _YNL]
_PRINT_RULE = "netregress-print-%:\n\t@echo $($*)\n"
_ERROR = re.compile(r"error|Error \d|No such file", re.I)


@dataclass(frozen=True)
class Helpers:
    """The helpers built and the ones left out (name → the first error that stopped it)."""

    built: tuple[str, ...]
    left_out: dict[str, str]


def read_helpers(net: Path) -> Helpers | None:
    """The record of an earlier build of this tree's helpers, if any."""
    try:
        raw = json.loads((net / RECORD).read_text())
        return Helpers(tuple(raw["built"]), dict(raw["left_out"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _make(args: list[str], cwd: Path, log: Path, timeout: float) -> None:
    with log.open("a") as out:
        try:
            subprocess.run(
                ["make", *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise KernelsError(f"make {' '.join(args)} in {cwd}: {exc}") from None


def _generated(net: Path, variables: tuple[str, ...] = _GENERATED) -> list[str]:
    """What the net Makefile generates (its helpers), as make itself expands it."""
    with tempfile.NamedTemporaryFile("w", suffix=".mk") as rule:
        rule.write(_PRINT_RULE)
        rule.flush()
        names: list[str] = []
        for variable in variables:
            proc = subprocess.run(
                ["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", rule.name,
                 f"netregress-print-{variable}"],
                cwd=net, capture_output=True, text=True, check=False,
            )  # fmt: skip
            names += [Path(word).name for word in proc.stdout.split()]
    return names


def _why(name: str, log: str, ynl: list[str]) -> str:
    """Why `name` was not built: its kind (a BPF object needs clang and libbpf, which needs
    libelf-dev; a YNL program is not built), then the first error line of the build log that
    names it, else the first error of the build."""
    if name in ynl:
        return "a YNL program (libynl, generated from Documentation/netlink/specs): not built"
    stem = name.removesuffix(".o").removesuffix(".bpf")
    kind = (
        "a BPF object (needs clang, and libbpf built with libelf-dev): "
        if name.endswith(".bpf.o")
        else ""
    )
    errors = [line.strip() for line in log.splitlines() if _ERROR.search(line)]
    mine = next((line for line in errors if stem in line), "")
    return (kind + (mine or (errors[0] if errors else f"not built (see {BUILD_LOG})")))[:240]


def build_helpers(top: Path, net: Path, status: Status, jobs: int = 2) -> Helpers:
    """Build the helpers of `net` (in the tree `top`) unless an earlier build's record is
    there; held under a lock, so concurrent sessions build once."""
    with locked(net / ".netregress-build.lock"):
        known = read_helpers(net)
        if known is not None:
            return known
        log = net / BUILD_LOG
        log.write_text("")
        status(f"installing the uAPI headers of {top} into its usr/include (once per tree)")
        _make(["-s", "headers_install"], top, log, 1800)
        if not (top / "usr" / "include" / "linux").is_dir():
            raise KernelsError(f"make headers_install in {top} installed nothing (see {log})")
        status(f"building the network selftests' helpers in {net} (once per tree)")
        _make(["-k", f"-j{jobs}", *_NO_YNL], net, log, 3600)
        names = _generated(net)
        ynl = _generated(net, _YNL)
        text = log.read_text(errors="replace")
        built = tuple(name for name in names if (net / name).exists())
        left_out = {name: _why(name, text, ynl) for name in names if not (net / name).exists()}
        (net / RECORD).write_text(
            json.dumps({"built": built, "left_out": left_out}, indent=2) + "\n"
        )
        return Helpers(built, left_out)
