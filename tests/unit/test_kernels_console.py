# SPDX-License-Identifier: GPL-2.0-only
"""Console scanning and the guest verdict: crash signs, hangs and silent deaths are crashes."""

from pathlib import Path

import pytest

from kernels.vm.console import scan, tail
from kernels.vm.qemu import verdict

PANIC = """\
[    5.100000] random: crng init done
[   12.345678] sysrq: Trigger a crash
[   12.345901] Kernel panic - not syncing: sysrq triggered crash
[   12.346100] CPU: 0 PID: 321 Comm: python Not tainted 6.1.0-50-cloud-amd64 #1
[   12.346200] Call Trace:
[   12.346300]  <TASK>
"""


def test_panic_is_found_with_context() -> None:
    crash = scan(PANIC)
    assert crash is not None
    assert crash.reason == "[   12.345901] Kernel panic - not syncing: sysrq triggered crash"
    assert "sysrq: Trigger a crash" in crash.excerpt and "Call Trace:" in crash.excerpt


@pytest.mark.parametrize("line", [
    "[    3.1] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "[    3.1] Oops: 0002 [#1] PREEMPT SMP NOPTI",
    "[    3.1] RIP: 0010:tcp_fragment+0x1a/0x3c0",
    "Call Trace:",
    "[    3.1] general protection fault, probably for non-canonical address 0xdead: 0000 [#1]",
    "[  120.5] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [python:99]",
    "[  240.1] INFO: task python:99 blocked for more than 120 seconds.",
    "[    3.1] [   T42] BUG: KASAN: use-after-free in skb_release_data+0x1/0x2",
])  # fmt: skip
def test_every_crash_sign_is_caught(line: str) -> None:
    crash = scan(f"[    1.0] booting\r\n{line}\r\n[    3.2] more\n")
    assert crash is not None and crash.reason == line.strip()


@pytest.mark.parametrize("text", [
    "tests/cases/test_bug.py::test_BUG_on_reuse PASSED",
    "E   AssertionError: expected 'Call Trace:' in dmesg",
    "collected 3 items\n\ntests/unit/test_x.py ..x   [100%]\n",
])  # fmt: skip
def test_pytest_output_is_not_a_crash(text: str) -> None:
    assert scan(text) is None


def test_tail_keeps_the_last_lines() -> None:
    text = "\r\n".join(f"line {n}" for n in range(100))
    assert tail(text, 3) == "line 97\nline 98\nline 99"


def _guest_files(tmp_path: Path, console: str, status: str | None) -> Path:
    (tmp_path / "console.log").write_text(console)
    if status is not None:
        (tmp_path / "exit-status").write_text(status)
    return tmp_path


def test_clean_exit_is_ok_and_keeps_the_status(tmp_path: Path) -> None:
    result = verdict(_guest_files(tmp_path, "[ 1.0] ok\n", "1\n"), 3.0, 9.0, None, "")
    assert (result.verdict, result.exit_status, result.crash) == ("ok", 1, None)


def test_hang_and_silent_death_are_crashes(tmp_path: Path) -> None:
    hung = verdict(
        _guest_files(tmp_path, "[ 1.0] Booting\n", None),
        None,
        120.0,
        "hung boot: no guest userspace after 120 s",
        "",
    )
    assert hung.verdict == "crash" and hung.crash is not None
    assert hung.crash.reason.startswith("hung boot") and "Booting" in hung.crash.excerpt
    died = verdict(tmp_path, 3.0, 5.0, None, "qemu-system-x86_64: terminating on signal 9\n")
    assert died.crash is not None and "without reporting an exit status" in died.crash.reason
    assert "terminating on signal 9" in died.crash.reason


def test_splat_with_a_clean_exit_is_still_a_crash(tmp_path: Path) -> None:
    console = "[ 9.0] WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 x\n[ 9.1] Call Trace:\n"
    result = verdict(_guest_files(tmp_path, console, "0"), 3.0, 9.0, None, "")
    assert result.verdict == "crash" and result.exit_status == 0
