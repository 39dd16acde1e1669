# SPDX-License-Identifier: GPL-2.0-only
"""The upstream-binary adapter, checked against output recorded in the reference
(docs/packetdrill-language.md, the **[observed]** examples): no binary can be installed here."""

import os
import stat
from pathlib import Path

import pytest

from packetdrill.backend import Backend, choose_backend, run_isolated
from packetdrill.errors import UsageError
from packetdrill.timing import judge_run
from packetdrill.tolerance import Tolerance
from packetdrill.upstream import parse_output, upstream_argv

PACKET_FAILURE = (
    "syn.pkt:8: error handling packet: live packet field ipv4_total_length: expected: 40 (0x28) "
    "vs actual: 52 (0x34)\n"
    "script packet:  0.100248 S. 0:0(0) ack 1 \n"
    "actual packet:  0.100210 S. 0:0(0) ack 1 win 65535 <mss 1460,nop,nop,sackOK,nop,wscale 8>\n"
)


def test_packet_failure_gives_line_message_and_both_dumps() -> None:
    result = parse_output("syn.pkt", 1, "", PACKET_FAILURE)
    assert not result.passed and result.backend == "upstream" and result.line == 8
    assert result.message.startswith(
        "syn.pkt:8: error handling packet: live packet field ipv4_total_length"
    )
    assert result.expected == "script packet:  0.100248 S. 0:0(0) ack 1 "
    assert result.actual.startswith("actual packet:  0.100210 S. 0:0(0) ack 1 win 65535")


@pytest.mark.parametrize(
    "stderr, line",
    [
        (
            "t.pkt:12: timing error: expected system call return at 0.400412 sec but happened at "
            "0.300736 sec; tolerance 0.025000 sec\n",
            12,
        ),
        ("t.pkt:5: runtime error in close call: unable to find fd with script fd 3\n", 5),
        ("t.pkt:3: parse error at 'key': syntax error\n", 3),
        ("t.pkt:9: error handling packet: Timed out waiting for packet\n", 9),
        ("t.pkt:7: runtime error in setsockopt call: unknown symbol: 'SO_FOO'\n", 7),
    ],
)
def test_located_failures(stderr: str, line: int) -> None:
    result = parse_output("t.pkt", 1, "", stderr)
    assert (result.passed, result.line, result.message) == (False, line, stderr.strip())
    assert result.expected == result.actual == ""


def test_code_failure_with_traceback_keeps_the_first_location() -> None:
    stderr = (
        "t.pkt:20: error in Python code\nTraceback (most recent call last):\n"
        '  File "/tmp/code_x", line 99, in <module>\nAssertionError\n'
        "t.pkt: error executing code: 'python3' returned non-zero status 1\n"
    )
    result = parse_output("t.pkt", 1, "", stderr)
    assert result.line == 20 and "returned non-zero status 1" in result.message


def test_unlocated_failure_and_success() -> None:
    failed = parse_output(
        "t.pkt", 1, "", "t.pkt: error executing init command: non-zero status 127\n"
    )
    assert (failed.passed, failed.line) == (False, None)
    passed = parse_output("t.pkt", 0, "socket syscall: 1795258483.722671\n", "")
    assert passed.passed and passed.message == "" and "socket syscall" in passed.stdout


def test_warnings_do_not_fail_a_run() -> None:
    result = parse_output("t.pkt", 0, "", "t.pkt:4: warning handling packet: ...\n")
    assert result.passed


def test_killed_binary_is_a_failure_with_a_reason() -> None:
    result = parse_output("t.pkt", -9, "", "")
    assert not result.passed and "signal 9" in result.message


def test_argv_drops_extensions_and_never_widens_the_tolerance() -> None:
    """The binary only has a symmetric tolerance: late slack must not reach it."""
    argv = upstream_argv(
        "/bin/pd",
        "t.pkt",
        [
            ("ip_version", "ipv6"),
            ("verbose", None),
            ("pcap", "/x.pcap"),
            ("tolerance_late_usecs", "20000"),
            ("tolerance_usecs", "10000"),
            ("define", "A=1"),
        ],
    )
    assert argv == [
        "/bin/pd",
        "--ip_version=ipv6",
        "-v",
        "--tolerance_usecs=10000",
        "--define=A=1",
        "t.pkt",
    ]
    assert upstream_argv("/bin/pd", "t.pkt", [("dry_run", None)]) == [
        "/bin/pd",
        "--dry_run",
        "t.pkt",
    ]


def test_backend_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PACKETDRILL", raising=False)
    assert choose_backend(None).name == "builtin"
    binary = tmp_path / "packetdrill"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    assert choose_backend(str(binary)).binary == str(binary)
    monkeypatch.setenv("PACKETDRILL", str(binary))
    assert choose_backend(None).name == "upstream"
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert choose_backend("auto").binary == str(binary)
    with pytest.raises(UsageError, match="not found or not executable"):
        choose_backend(str(tmp_path / "missing"))


FAKE_BINARY = """#!/bin/sh
# Stands in for upstream packetdrill: checks it runs isolated and from the script's folder,
# then fails the way packetdrill does.
for arg; do last=$arg; done
ip -o link | grep -qv ': lo:' && { echo "not in a fresh namespace" >&2; exit 3; }
test -f "./$(basename "$last")" || { echo "not run from the script's folder" >&2; exit 4; }
echo "args: $*"
echo "$last:2: error handling packet: Timed out waiting for packet" >&2
exit 1
"""


def fake_binary(tmp_path: Path, text: str) -> Backend:
    """The upstream backend, with the shell script ``text`` as its binary."""
    binary = tmp_path / "packetdrill"
    binary.write_text(text)
    binary.chmod(0o755)
    return choose_backend(str(binary))


def test_upstream_runs_isolated_from_the_script_folder(tmp_path: Path) -> None:
    script = tmp_path / "s.pkt"
    script.write_text("0 `true`\n+0 > . 1:1(0) ack 1\n")
    result = run_isolated(
        fake_binary(tmp_path, FAKE_BINARY),
        str(script),
        [("ip_version", "ipv6"), ("pcap", "/nowhere.pcap")],
    )
    assert (result.passed, result.backend, result.line) == (False, "upstream", 2)
    assert result.message == f"{script}:2: error handling packet: Timed out waiting for packet"
    assert "--ip_version=ipv6" in result.stdout and "pcap" not in result.stdout


LATE_BINARY = """#!/bin/sh
# Fails the way packetdrill does when a packet came 30 ms after its range.
for arg; do last=$arg; done
echo "$last:3: error handling packet: timing error: expected outbound packet in relative time \
range +0.100000~+0.200000 sec but happened at +0.230000 sec" >&2
exit 1
"""


def test_the_adapter_judges_by_the_scripts_own_tolerance(tmp_path: Path) -> None:
    """Nobody hands the adapter a tolerance: it gets the config parsed from the script and the
    command line, and the result reports it. The range error does not print the tolerance, so
    how late it was depends on the script's base (10 ms here, not the 4 ms default)."""
    backend = fake_binary(tmp_path, LATE_BINARY)
    script = tmp_path / "s.pkt"
    script.write_text("--tolerance_usecs=10000\n0 `true`\n+0 > . 1:1(0) ack 1\n")
    result = run_isolated(backend, str(script), [("tolerance_percent", "1")])
    assert (result.timing_error, result.late_error_usecs) == ("late", 20_000)
    assert result.tolerance == Tolerance(10_000, 1.0, base_from="command line")
    policy = Tolerance().with_slack(25_000, "calibrated")
    result = run_isolated(backend, str(script), [], policy)
    assert result.tolerance == Tolerance(
        10_000, late_slack_usecs=25_000, base_from="script", slack_from="calibrated"
    )
    assert judge_run(result, result.tolerance).verdict == "not-checkable"
