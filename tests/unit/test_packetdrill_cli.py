# SPDX-License-Identifier: GPL-2.0-only
"""The engine's command line: upstream-compatible exit codes and diagnostics, -v output, the
pcap of a run, and that each run lives in its own network namespace."""

import subprocess
import sys
from pathlib import Path

from scapy.utils import rdpcap

from packetdrill.engine_process import engine_command

UDP_SCRIPT = """\
    0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3
   +0 bind(3, ..., ...) = 0
   +0 sendto(3, ..., 10, 0, ..., ...) = 10
   +0 > udp (10)
   +0 < udp (100)
   +0 recvfrom(3, ..., 1000, 0, ..., ...) = 100
   +0 connect(3, ..., ...) = 0
   +0 write(3, ..., 10) = 10
   +0 > udp (10)
"""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        engine_command() + list(args),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def script(tmp_path: Path, text: str, name: str = "t.pkt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_success_is_silent_and_exit_zero(tmp_path: Path) -> None:
    done = run(str(script(tmp_path, UDP_SCRIPT)))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_verbose_output(tmp_path: Path) -> None:
    done = run("-v", "--ip_version=ipv6", str(script(tmp_path, UDP_SCRIPT)))
    assert done.returncode == 0, done.stderr
    assert "socket syscall: " in done.stdout
    assert "inbound injected packet: " in done.stdout and "udp (100)" in done.stdout
    assert "outbound sniffed packet: " in done.stdout and "udp (10)" in done.stdout


def test_packet_mismatch_exit_status_and_format(tmp_path: Path) -> None:
    last = "write(3, ..., 10) = 10\n   +0 > "
    path = script(tmp_path, UDP_SCRIPT.replace(last + "udp", last + "(tos 0x10) udp"))
    done = run(str(path))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"{path}:9: error handling packet: live packet field tos: "
        "expected: 16 (0x10) vs actual: 0 (0x0)"
    )
    assert lines[1].startswith("script packet: ") and lines[1].endswith(" udp (10)")
    assert lines[2].startswith("actual packet: ") and lines[2].endswith(" udp (10)")


def test_pcap_holds_every_packet(tmp_path: Path) -> None:
    pcap = tmp_path / "run.pcap"
    done = run(f"--pcap={pcap}", str(script(tmp_path, UDP_SCRIPT)))
    assert done.returncode == 0, done.stderr
    lengths = sorted(len(p) for p in rdpcap(str(pcap)))
    assert 38 in lengths and 128 in lengths  # our 10-byte reply, the injected 100 bytes


def test_parse_error_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = script(
        tmp_path, f"`touch {marker}`\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 frob\n"
    )
    done = run(str(path))
    assert (done.returncode, done.stderr) == (1, f"{path}:4: parse error at '': syntax error\n")
    assert not marker.exists()


def test_usage_errors(tmp_path: Path) -> None:
    done = run()
    assert done.returncode == 1 and done.stderr.startswith("error: missing script path\nusage:")
    done = run("--no_such_option", "x.pkt")
    assert done.returncode == 1 and "unrecognized option '--no_such_option'" in done.stderr
    assert "usage: packetdrill" in done.stderr
    done = run("--packetdrill=/nonexistent/packetdrill", "x.pkt")
    assert done.returncode == 1 and "not found or not executable" in done.stderr


def test_missing_file_and_unsupported_modes(tmp_path: Path) -> None:
    done = run(str(tmp_path / "nope.pkt"))
    assert done.stderr == (
        f"parse error: stat() of script file '{tmp_path / 'nope.pkt'}': No such file or directory\n"
    )
    done = run("--wire_client", str(script(tmp_path, UDP_SCRIPT)))
    assert done.returncode == 1 and "wire mode (--wire_client) is not supported" in done.stderr


def test_dry_run_only_parses(tmp_path: Path) -> None:
    done = run("--dry_run", str(script(tmp_path, "0 frob_call(1) = 0\n")))
    assert (done.returncode, done.stderr) == (0, "")


def test_first_failure_ends_a_multi_script_run(tmp_path: Path) -> None:
    good = script(tmp_path, UDP_SCRIPT, "good.pkt")
    bad = script(tmp_path, "0 `false`\n", "bad.pkt")
    done = run(str(good), str(bad), str(good))
    assert done.returncode == 1
    assert done.stderr == f"{bad}:1: error executing `false` command: non-zero status 1\n"


def test_each_run_has_its_own_namespace(tmp_path: Path) -> None:
    """Commands see tun0 (ours) and nothing of the caller's namespace; nothing is left."""
    before = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    path = script(
        tmp_path, "0 `ip -o link | grep -q tun0 && ! ip -o link | grep -qv -e tun0 -e ': lo:'`\n"
    )
    done = run(str(path))
    assert done.returncode == 0, done.stderr
    assert subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout == before


def test_console_script_is_installed() -> None:
    tool = Path(sys.executable).parent / "netregress-packetdrill"
    done = subprocess.run([str(tool)], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "missing script path" in done.stderr


def test_a_23_digit_integer_is_upstreams_range_error(tmp_path: Path) -> None:
    """It saturates like upstream's atoll() and fails the 32-bit check, in upstream's words."""
    path = script(
        tmp_path,
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "+0 read(3, ..., 12345678901234567890123) = 0\n",
    )
    done = run(str(path))
    assert (done.returncode, done.stderr) == (
        1,
        f"{path}:2: runtime error in read call: Value "
        "out of range for 32-bit integer: "
        "9223372036854775807\n",
    )
