# SPDX-License-Identifier: GPL-2.0-only
"""End to end on a real kernel in QEMU: the bookworm 6.1 cloud kernel, as CI uses it.

Slow (a TCG guest imports pytest 10-30x slower than the host); marked `vm` and skipped with the
reason when `scripts/setup --vm` has not been run. The first run downloads the kernel (~26 MB).
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from kcidb_io import schema
from tap.parser import Parser

from kernels import tools
from kernels.errors import KernelsError
from kernels.matrix import reportlog
from kernels.paths import REPO_ROOT
from kernels.vm import gate, phases

KERNEL = "bookworm-6.1"
# How every report names it (netregress.session.KernelUnderTest.words).
NAMED = rf"{KERNEL} 6\.1\.\S+ \(Debian package 6\.1\.\S+\), in a VM, accel (kvm|tcg)"


def _host() -> str:
    """This machine as the reports name it, apart from the kernel under test."""
    machine = os.uname()
    return f"{machine.sysname} {machine.release} {machine.machine}"


def _vm_problem() -> str | None:
    if os.environ.get("NETREGRESS_KERNEL"):
        return "already inside a kernel-matrix run (no nested VMs)"
    try:
        tools.require_root()
        tools.qemu()
        tools.virtiofsd()
    except KernelsError as exc:
        return str(exc)
    if not Path("/bin/busybox").is_file():
        return "busybox is missing: run scripts/setup --vm"
    return None


pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(_vm_problem() is not None, reason=str(_vm_problem())),
]


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and proc.name != str(os.getpid()):
            found.append(cmdline)
    return found


def test_pytest_kernel_runs_the_tests_in_the_guest(tmp_path: Path) -> None:
    ktap = tmp_path / "host.tap"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--kernel", KERNEL, "tests/unit/test_kernels_guest.py",
         "-p", "no:cacheprovider", "-rA", *reportlog.pytest_args(str(tmp_path)),
         "--ktap-file", str(ktap)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(rf"^kernel under test: {NAMED}$", proc.stdout, re.M), proc.stdout
    assert f"host: {_host()}" in proc.stdout.splitlines()
    host = reportlog.read(tmp_path)  # the host session's own report log: the guest's reports
    outcomes = {r.nodeid.rpartition("::")[2]: r.outcome for r in host.results()}
    assert outcomes == {
        "test_runs_the_requested_kernel": "pass",
        "test_ipip_tunnel_in_fresh_namespace": "pass",  # the host kernel has no ipip
        "test_modules_autoload_on_demand": "pass",
        "test_tcp_plb_sysctl": "xfail",  # strict xfail from kernels/expectations.toml
        "test_identity_files_are_the_guests_own_copy": "pass",
    }
    text = ktap.read_text()  # --ktap-file on the host side of --kernel: the guest's results
    assert re.fullmatch(rf"# netregress on {NAMED}", text.splitlines()[2]), text
    assert [r.ok for r in Parser().parse_text(text) if r.category == "test"] == [True] * 5
    assert "# XFAIL TCP PLB" in text


FAILING = """
import os


def twice(value):
    return value * 2


def test_passes_in_the_guest():
    assert os.environ.get("NETREGRESS_KERNEL") == {kernel!r}


def test_fails_in_the_guest():
    half = 21
    assert twice(half) == 43, "a real failure inside the guest"
"""


def test_a_guest_failure_reaches_the_host_report_with_its_traceback(tmp_path: Path) -> None:
    """`pytest --kernel`: the host's terminal, JUnit and KTAP show the guest's assertion and
    traceback as a local run would (file:line, source, `E` lines), not a pasted text."""
    (tmp_path / "test_failing.py").write_text(FAILING.format(kernel=KERNEL))
    junit, ktap = tmp_path / "host.xml", tmp_path / "host.tap"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "kernels.pytest_plugin", "--kernel", KERNEL,
         "test_failing.py", "-p", "no:cacheprovider", "-rfE", f"--junitxml={junit}",
         "--ktap-file", str(ktap)],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200,
        env={**os.environ, "COLUMNS": "200"},  # the short summary line, not cut at 80
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout
    traceback = [
        "    def test_fails_in_the_guest():",
        '>       assert twice(half) == 43, "a real failure inside the guest"',
        "E       AssertionError: a real failure inside the guest",
        "E       assert 42 == 43",
        "E        +  where 42 = twice(21)",
        "test_failing.py:15: AssertionError",
    ]
    lines = proc.stdout.splitlines()
    assert all(line in lines for line in traceback), proc.stdout
    summary = "FAILED test_failing.py::test_fails_in_the_guest - AssertionError: a real failure"
    assert any(line.startswith(summary) for line in lines), proc.stdout
    suite = ET.parse(junit).find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert properties["kernel"] == KERNEL and properties["accel"] in ("kvm", "tcg")
    assert (properties.get("kernel_release") or "").startswith("6.1.")
    assert "boot_seconds" in properties and properties.get("host") == _host()
    failure = ET.parse(junit).find(".//testcase[@name='test_fails_in_the_guest']/failure")
    assert failure is not None and failure.text is not None
    assert failure.get("message", "").startswith("AssertionError: a real failure inside the guest")
    assert traceback[1] in failure.text.splitlines()
    assert "# E       AssertionError: a real failure inside the guest" in ktap.read_text()


DEMO = """
import os
import pytest

IN_GUEST = os.environ.get("NETREGRESS_KERNEL_RELEASE") == os.uname().release != {host!r}


def test_a_passes():
    assert IN_GUEST


def test_b_fails():
    assert 6 * 7 == 43, "a real failure inside the guest"


def test_c_panics():
    if not IN_GUEST:
        pytest.skip("crashes the kernel on purpose: guest only")
    with open("/proc/sysrq-trigger", "w") as trigger:
        trigger.write("c")


def test_d_never_runs():
    pass
"""


def test_matrix_reports_failure_panic_and_bogus_image(tmp_path: Path) -> None:
    demo = tmp_path / "demo" / "test_demo.py"
    demo.parent.mkdir()
    demo.write_text(DEMO.format(host=os.uname().release))
    bogus = tmp_path / "bogus-bzImage"
    bogus.write_bytes(os.urandom(4096))
    catalog = tmp_path / "matrix.toml"
    catalog.write_text(
        textwrap.dedent(f"""
        [kernels."{KERNEL}"]
        kind = "debian"
        suite = "bookworm"
        flavour = "cloud-amd64"
        [kernels.bogus]
        kind = "path"
        image = "{bogus}"
    """)
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(REPO_ROOT / "scripts/matrix"), "--catalog", str(catalog), "--output", str(out),
         str(demo)],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads((out / "matrix.json").read_text())
    cells = {test.rpartition("::")[2]: {k: v["outcome"] for k, v in row.items()}
             for test, row in data["tests"].items()}  # fmt: skip
    assert cells == {
        "test_a_passes": {KERNEL: "pass", "bogus": "crash"},
        "test_b_fails": {KERNEL: "fail", "bogus": "crash"},
        "test_c_panics": {KERNEL: "crash", "bogus": "crash"},
        "test_d_never_runs": {KERNEL: "crash", "bogus": "crash"},
        "(kernel console)": {KERNEL: "crash", "bogus": "crash"},
    }
    kernels = {k["kernel"]: k for k in data["kernels"]}
    assert "Kernel panic - not syncing: sysrq triggered crash" in kernels[KERNEL]["status"]
    assert "sysrq" in kernels[KERNEL]["crash_excerpt"]
    assert "is not an x86 bzImage" in kernels["bogus"]["status"]
    markdown = (out / "matrix.md").read_text()
    failure = "test_b_fails on bookworm-6.1: AssertionError: a real failure inside the guest"
    assert failure in markdown
    assert "assert (6 * 7) == 43" in markdown  # the guest's traceback travels with the cell
    assert {p.name for p in out.glob("junit-*.xml")} == {f"junit-{KERNEL}.xml", "junit-bogus.xml"}
    assert _processes_mentioning(str(out)) == []  # no QEMU or virtiofsd survives the run
    _check_ktap_and_kcidb(out)


def _check_ktap_and_kcidb(out: Path) -> None:
    """The real guest's matrix in the ecosystem's formats: KTAP per kernel (read by tap.py),
    KCIDB validated against the published schema, the panic kept in both."""
    ktap = (out / f"ktap-{KERNEL}.tap").read_text()
    results = [line for line in Parser().parse_text(ktap) if line.category == "test"]
    assert [r.ok for r in results] == [True, False, False, False, False]
    assert re.search(r"^not ok 3 \S+test_c_panics # ERROR .*Kernel panic - not syncing", ktap, re.M)
    proc = subprocess.run([str(REPO_ROOT / "scripts/matrix"), "export", "kcidb", str(out)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((out / "kcidb.json").read_text())
    schema.LATEST.validate(data)
    status = {(t["build_id"].split(":")[2], t["path"].rpartition(".")[2]): t["status"]
              for t in data["tests"]}  # fmt: skip
    assert status[(KERNEL, "test_c_panics")] == "FAIL"  # took the kernel down
    assert status[(KERNEL, "test_d_never_runs")] == "MISS"
    assert status[(KERNEL, "kernel_console")] == "FAIL"
    builds = {b["id"].split(":")[2]: b for b in data["builds"]}
    assert builds[KERNEL]["misc"]["version"].startswith("6.1.")
    assert builds["bogus"]["status"] == "MISS"


DETECTORS = f"""\
from pathlib import Path

def test_the_stall_detectors_are_on():
    for name, value in {gate.DETECTORS_ON!r}:
        assert Path(name).read_text().strip() == value, name
"""


def test_a_guest_without_a_slot_boots_ahead_and_runs_its_tests_after_its_turn(
    tmp_path: Path,
) -> None:
    """`--jobs 1`, two guests: the second boots beside the first at idle priority (its stall
    detectors off), collects, and runs its first test only once the first guest has ended,
    with its detectors back on (kernels/matrix/slots.py, kernels/vm/gate.py)."""
    demo = tmp_path / "demo" / "test_turn.py"
    demo.parent.mkdir()
    demo.write_text(DETECTORS)
    catalog = tmp_path / "matrix.toml"
    catalog.write_text(
        "".join(
            f'[kernels.{name}]\nkind = "debian"\nsuite = "bookworm"\nflavour = "cloud-amd64"\n'
            for name in ("turn-a", "turn-b")
        )
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(REPO_ROOT / "scripts/matrix"), "--catalog", str(catalog), "--jobs", "1",
         "--output", str(out), str(demo)],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    gated = [name for name in ("turn-a", "turn-b") if (out / name / gate.FILE).exists()]
    assert len(gated) == 1, "exactly one guest waited for a slot"
    (second,) = gated
    (first,) = {"turn-a", "turn-b"} - {second}
    stamps = phases.read(out / second / phases.FILE).stamps
    assert stamps["collected"] < stamps["gate-opened"] < stamps["tests-done"]
    first_ended = (out / first / "exit-status").stat().st_mtime
    assert (out / second / gate.FILE).stat().st_mtime >= first_ended
    assert "gate-opened" not in phases.read(out / first / phases.FILE).stamps
    assert _processes_mentioning(str(out)) == []
