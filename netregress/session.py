# SPDX-License-Identifier: GPL-2.0-only
"""What netregress's pytest plugins share: where a session's tests run, where a test's
evidence goes, the names its reports carry, and the hooks one plugin asks others through.

Why one module: the plugins (namespaces, packetdrill scripts, evidence pages, the kernel
matrix) are separate and each can be named alone (``-p netns.pytest_plugin``); they agree
through these facts instead of importing each other, so no plugin drags in another's options
and hooks, and one that is absent simply contributes nothing.

Why pytest in the base package: a stash key and a hook specification are pytest's types. Only
plugins import this module, inside a pytest that is already loaded; the engine process and the
command lines, which the base keeps free of third-party imports, never do
(``tests/unit/test_layout.py`` holds both).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

# The user properties a report carries across processes (an xdist worker, a VM guest, JUnit).
ARTIFACTS_PROPERTY = "artifacts"  # the guest's evidence folder of a replayed report
KERNEL_PROPERTY = "kernel"  # the kernel a replayed report ran on
# A report attribute (it travels from an xdist worker with the report, as pytest's `wasxfail`
# does): a broken variant (netns/variants.py) failed exactly as its xfail mark says, proving
# its case's oracle; the summary counts these apart from other xfails.
ORACLE_PROVED = "netregress_oracle_proved"


@dataclass(frozen=True)
class KernelUnderTest:
    """The kernel a session's verdicts are about, as every report of it names that kernel.

    Why one type: the terminal header, report.html's environment table, the JUnit suite's
    properties and the KTAP header each once named the kernel their own way (or not at all:
    report.html showed only the host's platform), so a reader could not tell which kernel a
    `pytest --kernel` run had passed. They all render this, and the matrix's files too.

    `release` is its `uname -r` (a guest's own), `version` the exact build: a Debian kernel's
    package version, else the release again (kernels/acquire/kernel.py reads both). `accel` is
    how it ran: "kvm" or "tcg" for a guest, "host" for the kernel this machine runs."""

    name: str  # its kernels/matrix.toml name; "running" for the kernel this machine runs
    release: str
    version: str
    accel: str

    def package(self) -> str:
        """The Debian package version, or "" for a build that names none (its version is its
        release)."""
        return self.version if self.version != self.release else ""

    def words(self) -> str:
        """One line for people: ``bookworm-6.1 6.1.0-50-cloud-amd64 (Debian package
        6.1.176-1), in a VM, accel tcg``."""
        package = f" (Debian package {self.package()})" if self.package() else ""
        where = "on the host" if self.accel == "host" else f"in a VM, accel {self.accel}"
        return f"{self.name} {self.release}{package}, {where}"

    def properties(self) -> list[tuple[str, str]]:
        """Name and value pairs for tools (a JUnit suite's properties)."""
        return [(KERNEL_PROPERTY, self.name), ("accel", self.accel),
                ("kernel_release", self.release), ("kernel_version", self.version)]  # fmt: skip


# Decided by the kernels plugin when the session is configured; absent without that plugin.
KERNEL_UNDER_TEST = pytest.StashKey[KernelUnderTest]()  # every session's
VM_KERNEL = pytest.StashKey[KernelUnderTest]()  # --kernel: the one its tests are sent to
ARTIFACTS_ROOT = pytest.StashKey[Path]()  # the run's evidence folder, from --artifacts-dir


def vm_kernel(config: pytest.Config) -> KernelUnderTest | None:
    """The kernel this session sends its tests to (a VM's), or None: they run on this one."""
    return config.stash.get(VM_KERNEL, None)


def folder_name(nodeid: str) -> str:
    """The per-test folder's name for a pytest node id: how the host finds the folder a guest
    wrote for the same test."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


def artifact_dir(item: pytest.Item) -> Path | None:
    """The folder *item*'s pcaps and counter snapshots go to; None when no plugin of this
    session keeps evidence per test (the namespaces plugin is not loaded)."""
    root = item.config.stash.get(ARTIFACTS_ROOT, None)
    return None if root is None else root / folder_name(item.nodeid)


class GuestHooks:
    """Asked by the kernels plugin, which adds these specifications; any plugin may answer."""

    @pytest.hookspec
    def pytest_netregress_guest_args(self, config: pytest.Config) -> list[str]:
        """The pytest arguments a VM guest needs to run this session's items as this host
        would (the guest otherwise gets only their node ids)."""
        raise NotImplementedError


class EnvironmentHooks:
    """Asked by the evidence plugin for the report's environment table, which adds these
    specifications; any plugin may answer."""

    @pytest.hookspec
    def pytest_netregress_environment(self, config: pytest.Config) -> dict[str, str]:
        """Rows known when the session starts."""
        raise NotImplementedError

    @pytest.hookspec
    def pytest_netregress_environment_at_end(
        self, config: pytest.Config, reports: Sequence[pytest.TestReport]
    ) -> dict[str, str]:
        """Rows known only once the tests ran, from every report the session saw."""
        raise NotImplementedError
