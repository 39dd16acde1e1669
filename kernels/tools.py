# SPDX-License-Identifier: GPL-2.0-only
"""Finding the host programs the VM runner needs, with the fix in the error message."""

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from kernels.errors import KernelsError

SETUP_HINT = "run scripts/setup --vm"
QEMU_MIN_MAJOR = 10  # bookworm's 7.2 corrupts TCG guests (docs/vm-boot.md §2)
DEBIAN_VIRTIOFSD = "/usr/libexec/virtiofsd"  # where Debian 13+ packages it


@cache
def qemu() -> str:
    """qemu-system-x86_64, version 10 or newer."""
    path = shutil.which("qemu-system-x86_64")
    if path is None:
        raise KernelsError(f"qemu-system-x86_64 is missing: {SETUP_HINT}")
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"version (\d+)\.", out)
    if not match or int(match.group(1)) < QEMU_MIN_MAJOR:
        raise KernelsError(
            f"{path} is too old ({out.splitlines()[0] if out else 'unknown version'}); "
            f"TCG guests need QEMU {QEMU_MIN_MAJOR}+: {SETUP_HINT}"
        )
    return path


@cache
def virtiofsd() -> str:
    """virtiofsd: on PATH, cargo's bin dir, or Debian's libexec location."""
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    candidates = [shutil.which("virtiofsd"), cargo_home / "bin/virtiofsd", DEBIAN_VIRTIOFSD]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise KernelsError(f"virtiofsd is missing: {SETUP_HINT}")


def require_root() -> None:
    """The runner needs root: virtiofsd shares / and the suite creates namespaces."""
    if os.geteuid() != 0:
        raise KernelsError("the kernel matrix needs root (virtiofsd, namespaces): run it with sudo")
