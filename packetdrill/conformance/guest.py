# SPDX-License-Identifier: GPL-2.0-only
"""``--kernel NAME``: the same conformance run inside a matrix kernel's VM guest.

Why a guest: many verdicts depend on the kernel (congestion controls a namespace may use, HZ,
option defaults), so a corpus is also worth judging on the kernels users test. This reuses the
matrix machinery unchanged (catalog, fetch, acceleration probe, the initramfs launcher and its
process hygiene): the guest runs this very command without ``--kernel``, writes its JSON and
progress into the output share, and the host renders the report from that JSON.
"""

import sys
import threading
import time
from pathlib import Path
from typing import Any

from kernels.acquire.catalog import load_catalog, lookup
from kernels.acquire.fetch import fetch
from kernels.errors import KernelsError
from kernels.matrix.runner import GUEST_MODULES, RunOptions, guest_env
from kernels.paths import REPO_ROOT
from kernels.vm.accel import choose_accel
from kernels.vm.initramfs import GUEST_OUT
from kernels.vm.launcher import Boot, GuestCommand
from kernels.vm.procs import run_dir
from kernels.vm.session import vm_session

from . import record
from .environment import config_hz
from .errors import GuestProblem

GUEST_TIMEOUT = 4 * 3600.0  # a 160-script corpus under TCG emulation takes hours
_JSON, _PROGRESS = "conformance.json", "conformance-progress.log"


def _say(message: str) -> None:
    print(f"conformance: {message}", file=sys.stderr, flush=True)


def run_in_kernel(name: str, argv: list[str], accel: str) -> tuple[dict[str, Any], int]:
    """Run ``argv`` (a conformance command line without --kernel/--out) in the guest."""
    try:
        spec = lookup(load_catalog(), name)
        kernel = fetch(spec, lambda message: _say(f"{spec.name}: {message}"))
    except KernelsError as err:
        raise GuestProblem(str(err)) from None
    out_dir = run_dir(f"conformance-{spec.name}")
    for stale in (_JSON, _PROGRESS):
        (out_dir / stale).unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "packetdrill.conformance",
        *argv,
        "--out",
        f"{GUEST_OUT}/{_JSON}",
        "--progress-file",
        f"{GUEST_OUT}/{_PROGRESS}",
    ]
    if kernel.image is None:  # the catalog's `running` entry: no VM needed
        raise GuestProblem(f"{spec.name} is the running kernel: run without --kernel")
    stop = threading.Event()
    follower = threading.Thread(target=_follow, args=(out_dir / _PROGRESS, stop), daemon=True)
    follower.start()
    try:
        with vm_session() as vm:
            launcher = vm.launcher
            chosen = choose_accel(accel, kernel, launcher, lambda m: _say(f"{spec.name}: {m}"))
            env = guest_env(kernel, RunOptions(pytest_args=[]), chosen, GUEST_OUT)
            env["PYTHONPATH"] = str(REPO_ROOT)
            guest = GuestCommand(command, Path.cwd(), env, GUEST_MODULES)
            result = launcher.run(
                Boot(kernel, guest, out_dir, chosen, GUEST_TIMEOUT),
                lambda m: _say(f"{spec.name} ({chosen}): {m}"),
            )
    except KernelsError as err:
        raise GuestProblem(str(err)) from None
    finally:
        stop.set()
        follower.join()
    _say(f"guest output in {out_dir}")
    if result.crash is not None:
        raise GuestProblem(
            f"the {spec.name} guest did not finish: {result.crash.reason}\n{result.crash.excerpt}"
        )
    try:
        doc = record.load(out_dir / _JSON)
    except record.ReferenceError:
        console = (out_dir / "console.log").read_text(errors="replace").splitlines()[-15:]
        raise GuestProblem(
            f"the guest wrote no result (exit status {result.exit_status}):\n" + "\n".join(console)
        ) from None
    if doc["environment"].get("config_hz") is None:  # the guest cannot see the kernel's
        doc["environment"]["config_hz"] = config_hz(
            kernel.image.parent  # package files
            / f"config-{kernel.release}"
        )
    doc["kernel"] = {
        "name": spec.name,
        "version": kernel.version,
        "release": kernel.release,
        "accel": chosen,
    }
    return doc, result.exit_status or 0


def _follow(path: Path, stop: threading.Event) -> None:
    """Echo the guest's progress lines as they arrive (the share is not cached)."""
    offset = 0
    while True:
        finished = stop.is_set()  # read once more after the guest ended
        try:
            with path.open() as handle:
                handle.seek(offset)
                chunk = handle.read()
                offset = handle.tell()
        except OSError:
            chunk = ""
        if chunk:
            sys.stderr.write(chunk)
            sys.stderr.flush()
        if finished:
            return
        time.sleep(0.5)
