# SPDX-License-Identifier: GPL-2.0-only
"""Our CLI as ``packetdrill`` on PATH: the kernel's own ``ksft_runner.sh``, unmodified, runs
scripts with it and reports in KTAP what each IP version did.

The runner and its ``ktap_helpers.sh`` come from a kernel tree on this machine (they are the
kernel's code, never copied into this repo): ``$NETREGRESS_KSFT_TREE`` names a kernel source
tree (one whose ``tools/testing/selftests/net/packetdrill/ksft_runner.sh`` exists); without
one the runner tests are skipped. The scripts are ours, shaped like the kernel's corpus (an
init command from the script's folder, a ``--ip_version=`` line, the runner's defines).
"""

import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from packetdrill.backend import upstream_on_path
from packetdrill.engine_process import engine_command

REPO = Path(__file__).resolve().parents[2]
SELFTESTS = "tools/testing/selftests"
RUNNER = f"{SELFTESTS}/net/packetdrill/ksft_runner.sh"
HELPERS = f"{SELFTESTS}/kselftest/ktap_helpers.sh"

INIT = """\
#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
sysctl -q net.ipv4.tcp_timestamps=1 net.ipv4.tcp_sack=1 net.ipv4.tcp_rmem="4096 540000 15728640"
tc qdisc add dev tun0 root pfifo
"""
# A passive open and one data segment each way; MSS 1460 in every variant (IPv6 runs with
# the runner's --mtu=1520). TFO_COOKIE is one of the runner's defines.
PASSIVE = """\
// netregress: our own script, shaped like the kernel's selftest corpus
`./init.sh`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 65535 <mss 1000,nop,nop,sackOK,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.01 < . 1:1(0) ack 1 win 512
   +0 accept(3, ..., ...) = 4
   +0 < P. 1:101(100) ack 1 win 512
   +0 > . 1:1(0) ack 101
   +0 write(4, ..., 10) = 10
   +0 > P. 1:11(10) ack 101
   +0 `test -n "TFO_COOKIE"`
"""


def packetdrill_on_path(folder: Path) -> Path:
    """``folder/packetdrill``: this checkout's CLI (the console script runs the same
    ``packetdrill.cli:main``), so the test needs no reinstall of the package."""
    tool = folder / "packetdrill"
    tool.write_text(f'#!/bin/sh\nexec {shlex.join(engine_command())} "$@"\n')
    tool.chmod(0o755)
    return tool


@pytest.fixture
def selftests(tmp_path: Path) -> Path:
    """A scratch kernel-tree layout holding the runner from ``$NETREGRESS_KSFT_TREE``."""
    tree = os.environ.get("NETREGRESS_KSFT_TREE")
    if not tree or not (Path(tree) / RUNNER).is_file():
        pytest.skip("not checkable: $NETREGRESS_KSFT_TREE names no kernel tree with " + RUNNER)
    if os.geteuid() != 0:
        pytest.skip("not checkable: ksft_runner.sh needs root (unshare -n)")
    for part in (RUNNER, HELPERS):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(tree) / part, tmp_path / part)
    folder = (tmp_path / RUNNER).parent
    (folder / "init.sh").write_text(INIT)
    (folder / "init.sh").chmod(0o755)
    return folder


def ksft_runner(folder: Path, script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    packetdrill_on_path(bin_dir)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("KSFT_MACHINE_SLOW", None)
    return subprocess.run(
        ["./ksft_runner.sh", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def results(ktap: str) -> dict[str, bool]:
    """The runner's KTAP test lines: IP version → passed."""
    found = re.findall(r"^(ok|not ok) \d+ (\S+)$", ktap, re.M)
    return {version: status == "ok" for status, version in found}


def test_the_kernel_runner_passes_every_ip_version(selftests: Path, tmp_path: Path) -> None:
    """Every version the runner picks passes (6.12's runner runs IPv4 and IPv6, later ones
    add IPv4-mapped-IPv6), and the runner's exit status says so."""
    (selftests / "passive.pkt").write_text(PASSIVE)
    done = ksft_runner(selftests, "passive.pkt", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = results(done.stdout)
    assert {"ipv4", "ipv6"} <= set(verdicts) and all(verdicts.values()), done.stdout


def test_the_kernel_runner_sees_a_failure(selftests: Path, tmp_path: Path) -> None:
    """The broken variant: with a wrong expected ACK every version fails, exit status 1."""
    (selftests / "broken.pkt").write_text(
        PASSIVE.replace("> . 1:1(0) ack 101", "> . 1:1(0) ack 51")
    )
    done = ksft_runner(selftests, "broken.pkt", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = results(done.stdout)
    assert {"ipv4", "ipv6"} <= set(verdicts) and not any(verdicts.values()), done.stdout
    assert "broken.pkt:12: error handling packet" in done.stderr, done.stderr


def test_packetdrill_is_a_console_script() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["packetdrill"] == scripts["netregress-packetdrill"] == "packetdrill.cli:main"


def test_auto_never_takes_our_console_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--packetdrill=auto`` looks for upstream's binary: our own ``packetdrill`` first on
    PATH is passed over (else the CLI would start itself, forever, under PACKETDRILL=auto)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    (ours / "packetdrill").write_text(
        "#!/usr/bin/python3\nimport sys\nfrom packetdrill.cli import main\nsys.exit(main())\n"
    )
    (theirs / "packetdrill").write_bytes(b"\x7fELF not really")
    for tool in (ours / "packetdrill", theirs / "packetdrill"):
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{ours}{os.pathsep}{theirs}")
    assert upstream_on_path() == str(theirs / "packetdrill")
    monkeypatch.setenv("PATH", str(ours))
    assert upstream_on_path() is None
