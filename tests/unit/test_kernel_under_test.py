# SPDX-License-Identifier: GPL-2.0-only
"""Every report names the kernel it judged, and the host apart from it: the terminal header,
report.html's environment table, the JUnit suite's properties and the KTAP header.

Real runs, each a pytest process of its own on this machine: a plain host run judges the
running kernel; `pytest --kernel running` sends the tests to a second pytest and replays its
reports, as it does a VM guest's (a guest's own names: tests/unit/test_kernels_vm.py; the
matrix's files: tests/unit/test_kernels_report.py). The expected names are read here from
`uname` and /proc/version, not from the code under test.
"""

import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from netregress.session import KernelUnderTest

REPO = Path(__file__).resolve().parents[2]
DEMO = "def test_passes():\n    pass\n"
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="--kernel needs root")


def _running() -> tuple[str, str, str]:
    """This machine's `uname -r`, its exact build (a Debian kernel's package version, named in
    /proc/version, else the release) and the host as the reports name it."""
    machine = os.uname()
    debian = re.search(r"Debian (\d+\.\d+\S*)", Path("/proc/version").read_text())
    version = debian.group(1) if debian else machine.release
    return machine.release, version, f"{machine.sysname} {machine.release} {machine.machine}"


def _environment(page: Path) -> dict[str, object]:
    """report.html's environment table: pytest-html keeps it as JSON in the page."""
    blob = re.search(r'data-jsonblob="([^"]*)"', page.read_text())
    assert blob, "no pytest-html data in the report"
    environment: dict[str, object] = json.loads(html.unescape(blob.group(1)))["environment"]
    return environment


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param([], id="host-run"),
        pytest.param(["--kernel", "running"], id="kernel-run", marks=AS_ROOT),
    ],
)
def test_every_report_names_the_kernel_under_test_and_the_host(
    tmp_path: Path, opted_in: None, sent: list[str]
) -> None:
    release, version, host = _running()
    (tmp_path / "test_demo.py").write_text(DEMO)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *sent, "test_demo.py", "-p", "no:cacheprovider",
         "--junitxml=out.xml", "--ktap-file=out.tap", "--html=out.html", "--self-contained-html"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout, not an installed copy
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    package = f" (Debian package {version})" if version != release else ""
    words = f"running {release}{package}, on the host"

    assert f"kernel under test: {words}" in proc.stdout.splitlines()
    assert f"host: {host}" in proc.stdout.splitlines()

    environment = _environment(tmp_path / "out.html")
    assert (environment["kernel under test"], environment["host"]) == (words, host)
    assert f'<h1 id="title">netregress on {words}</h1>' in (tmp_path / "out.html").read_text()

    suite = ET.parse(tmp_path / "out.xml").find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert properties == {"kernel": "running", "accel": "host", "kernel_release": release,
                          "kernel_version": version, "host": host}  # fmt: skip

    lines = (tmp_path / "out.tap").read_text().splitlines()
    assert lines[:4] == ["KTAP version 1", "1..1", f"# netregress on {words}", f"# host: {host}"]


def test_a_guest_is_named_by_its_release_its_debian_package_and_how_it_ran() -> None:
    debian = KernelUnderTest("bookworm-6.1", "6.1.0-50-cloud-amd64", "6.1.176-1", "tcg")
    assert debian.words() == (
        "bookworm-6.1 6.1.0-50-cloud-amd64 (Debian package 6.1.176-1), in a VM, accel tcg"
    )
    built = KernelUnderTest("mainline", "6.15.0-rc1", "6.15.0-rc1", "kvm")  # no package
    assert built.words() == "mainline 6.15.0-rc1, in a VM, accel kvm"
    assert built.properties() == [("kernel", "mainline"), ("accel", "kvm"),
                                  ("kernel_release", "6.15.0-rc1"),
                                  ("kernel_version", "6.15.0-rc1")]  # fmt: skip
