# SPDX-License-Identifier: GPL-2.0-only
"""The pytest plugin: collection per IP variant, lint failures as items, expect-fail
headers, what a failing script reports, and packetdrill's own options given on the pytest
command line (defines, the base tolerance, the IP variants) reaching both engines."""

import fnmatch

import pytest

from packetdrill.pytest_plugin import ScriptOptions

pytest_plugins = ["pytester"]

GOOD = """\
    0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3
   +0 connect(3, ..., ...) = 0
   +0 write(3, ..., 10) = 10
   +0 > udp (10)
"""


def test_variants_follow_the_corpus_conventions(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".pkt",
        **{"all": GOOD, "only-v6": GOOD, "only-v4": GOOD, "pinned": "--ip_version=ipv6\n" + GOOD},
    )
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    ids = {line.strip() for line in result.outlines if ".pkt::" in line}
    assert ids == {
        "all.pkt::ipv4",
        "all.pkt::ipv4-mapped-ipv6",
        "all.pkt::ipv6",
        "only-v6.pkt::ipv6",
        "only-v4.pkt::ipv4",
        "only-v4.pkt::ipv4-mapped-ipv6",
        "pinned.pkt::ipv6",
    }


def test_a_malformed_script_is_one_failing_item(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", bad="0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 frob 3\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*bad.pkt:2: parse error at '3': syntax error*"])
    assert "Traceback" not in result.stdout.str()


def test_a_failure_shows_message_line_packets_and_pcap(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", **{"wrong-v4": GOOD.replace("> udp", "> (tos 0x10) udp")})
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "ipv4 and not mapped")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*wrong-v4.pkt:4: error handling packet: live packet field tos*",
            "script packet:*udp (10)",
            "actual packet:*udp (10)",
            "script line: 4",
            "pcap: *.pcap",
        ]
    )


# A passive TCP open, then one data segment whose expected line is the last one.
TCP = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
  +.1 < S 0:0(0) win 32792 <mss 1000,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <...>
  +.1 < . 1:1(0) ack 1 win 257
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 100) = 100
   +0 > P. 1:101(100) ack 1
"""


@pytest.mark.parametrize(
    "script, first_line, actual",
    [
        pytest.param(
            GOOD.replace("> udp", "> (tos 0x10) udp"),
            "*:4: error handling packet: live packet field tos*",
            "udp (10)",
            id="field",
        ),
        pytest.param(
            TCP.replace("write(4, ..., 100) = 100", "write(4, ..., 1000) = 1000"),
            "*:9: error handling packet: live packet payload: expected 100 bytes vs actual "
            "1000 bytes",
            "P. 1:1001(1000) ack 1 win *",
            id="payload-length",
        ),
        pytest.param(
            # no ACK comes, so the retransmission is an RTO (200 ms at least) after the send
            TCP + "+0~+.05 > P. 1:101(100) ack 1\n",
            "*:10: error handling packet: timing error: expected outbound packet in relative "
            "time range +0.000000~+0.050000 sec but happened at +0.*",
            "P. 1:101(100) ack 1 win *",
            id="timing",
        ),
    ],
)
def test_a_failure_shows_the_script_and_the_actual_packet_once(
    pytester: pytest.Pytester, script: str, first_line: str, actual: str
) -> None:
    """Whatever the mismatch of a sniffed packet, the failure shows the packet the script
    expected and the one the kernel sent, each once: a timing error used to print both twice,
    a wrong payload length neither. No late slack (scale 1): a loaded host must not turn the
    late retransmission into "not checkable"."""
    pytester.makefile(".pkt", **{"wrong-v4": script})
    records = pytester.inline_run(
        "-p", "no:cacheprovider", "--pkt-ip-version=ipv4", "--tolerance-scale=1"
    )
    [report] = records.getfailures()
    text = report.longreprtext
    assert fnmatch.fnmatch(text.splitlines()[0], first_line), text
    assert text.count("script packet:") == 1, text
    assert text.count("actual packet:") == 1, text
    [shown] = [line for line in text.splitlines() if line.startswith("actual packet:")]
    assert fnmatch.fnmatch(shown, f"actual packet: * {actual}"), text


def test_a_failed_code_block_shows_the_value_its_assertion_printed(
    pytester: pytest.Pytester,
) -> None:
    """The diagnostic both engines print for a code block is ``error executing code``; the
    value that failed is in the block's traceback, which the item must show too (found on
    the kernel's ``tcp-info-sndbuf-limited.pkt``, which asserts on times in tcp_info). The
    broken variant: a block that holds shows no traceback, and passes."""
    block = (
        "+.1 < . 1:1(0) ack 101 win 257\n   +0 %{{ assert tcpi_snd_mss == {mss}, tcpi_snd_mss }}%\n"
    )
    pytester.makefile(".pkt", **{"code-v4": TCP + block.format(mss=999)})
    pytester.makefile(".pkt", **{"holds-v4": TCP + block.format(mss=1000)})
    args = ("-p", "no:cacheprovider", "--pkt-ip-version=ipv4", "--tolerance-scale=1")
    records = pytester.inline_run(*args)
    [report] = records.getfailures()
    text = report.longreprtext
    assert "code-v4.pkt: error executing code: 'python3' returned non-zero status 1" in text
    assert text.count("error executing code") == 1, text
    tail = text.split("--- engine stderr ---\n", 1)[1]
    assert "code-v4.pkt:11: error in Python code" in tail
    assert tail.rstrip().endswith("AssertionError: 1000"), text
    records.assertoutcome(passed=1, failed=1)


def test_expect_fail_header(pytester: pytest.Pytester) -> None:
    failing = GOOD.replace("udp (10)", "udp (20)")
    pytester.makefile(
        ".pkt",
        **{
            "neg-ok": "--ip_version=ipv4\n// netregress: expect-fail: live packet payload\n"
            + failing,
            "neg-wrong-msg": "--ip_version=ipv4\n// netregress: expect-fail: tcp_seq\n" + failing,
            "neg-passes": "--ip_version=ipv4\n// netregress: expect-fail: anything\n" + GOOD,
        },
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*expected a failure matching /anything/, but the script passed*"])
    result.stdout.fnmatch_lines(["*expected a failure matching /tcp_seq/, got:*"])


def test_header_reports_backend_and_tolerance(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", x=GOOD)
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider", "--tolerance-scale=3")
    result.stdout.fnmatch_lines(
        [
            "packetdrill: builtin engine; late-side timing slack +8.0 ms "
            "(--tolerance-scale=3); bound +30 ms"
        ]
    )
    result = pytester.runpytest(
        "--collect-only", "-p", "no:cacheprovider", "--packetdrill=/nonexistent"
    )
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*packetdrill binary not found or not executable*"])


def test_pcap_kept_for_failures_only(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", **{"good-v4": GOOD, "bad-v4": GOOD.replace("(10)\n", "(20)\n")})
    artifacts = pytester.path / "evidence"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--artifacts-dir={artifacts}", "-k", "ipv4 and not mapped"
    )
    result.assert_outcomes(passed=1, failed=1)
    pcaps = sorted(p.name for p in artifacts.rglob("*.pcap"))
    assert len(pcaps) == 1 and pcaps[0].startswith(tuple("0123456789")) and "bad-v4" in pcaps[0]


def test_skip_if_kernel_has(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".pkt", **{"needs-no-tun-v4": "// netregress: skip-if-kernel-has: tun\n" + GOOD}
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*needs-no-tun-v4.pkt expects a kernel without tun*"])


# The result is a define: without one the engine compares the word SIZE with the 10 bytes
# written, a wrong one compares the wrong number.
SIZED = GOOD.replace("write(3, ..., 10) = 10", "write(3, ..., 10) = SIZE")
# The datagram leaves at once, 500 ms before the script says: early beyond the default base
# tolerance (12.5 % of the gap, 62.5 ms), which no slowness can excuse; a 1 s base covers it.
EARLY = GOOD.replace("   +0 > udp", "  +.5 > udp")


def run_v4(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--pkt-ip-version=ipv4", *args)


def test_a_define_on_the_command_line_reaches_the_script(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", **{"sized-v4": SIZED})
    without = run_v4(pytester)
    without.assert_outcomes(failed=1)
    without.stdout.fnmatch_lines(["*sized-v4.pkt:3: runtime error in write call: Bad type*"])
    run_v4(pytester, "-D", "SIZE=10").assert_outcomes(passed=1)
    wrong = run_v4(pytester, "--pkt-define=SIZE=20")
    wrong.assert_outcomes(failed=1)
    wrong.stdout.fnmatch_lines(["*Expected result 20 but got 10*"])


def test_a_define_wins_over_the_variants_own(pytester: pytest.Pytester) -> None:
    """The variant's arguments define CODE=host_unreachable (upstream's corpus runner does)."""
    pytester.makefile(".pkt", **{"code-v4": GOOD.replace("= 10\n", "= CODE\n", 1)})
    run_v4(pytester, "-D", "CODE=10").assert_outcomes(passed=1)


def test_the_tolerance_on_the_command_line_reaches_the_script(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", **{"early-v4": EARLY})
    default = run_v4(pytester, "--tolerance-scale=1")
    default.assert_outcomes(failed=1)
    default.stdout.fnmatch_lines(["*expected outbound packet at 0.5* but happened at 0.0*"])
    run_v4(pytester, "--tolerance-scale=1", "--pkt-tolerance-usecs=1000000").assert_outcomes(
        passed=1
    )


ARGS_BINARY = """#!/bin/sh
# Stands in for upstream packetdrill: prints the options it was given, then fails.
echo "args: $*"
exit 1
"""


def test_the_upstream_binary_gets_the_same_options(pytester: pytest.Pytester) -> None:
    binary = pytester.path / "packetdrill"
    binary.write_text(ARGS_BINARY)
    binary.chmod(0o755)
    pytester.makefile(".pkt", **{"sized-v4": SIZED})
    result = run_v4(
        pytester, f"--packetdrill={binary}", "-D", "SIZE=10", "--pkt-tolerance-usecs=8000"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["args: *--define=SIZE=10 --tolerance_usecs=8000 *sized-v4.pkt"])


def test_ip_version_keeps_only_those_variants(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", **{"all": GOOD, "only-v4": GOOD, "only-v6": GOOD})
    result = pytester.runpytest(
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "--pkt-ip-version=ipv6",
        "--pkt-ip-version=ipv4-mapped-ipv6",
    )
    ids = {line.strip() for line in result.outlines if ".pkt::" in line}
    assert ids == {
        "all.pkt::ipv4-mapped-ipv6",
        "all.pkt::ipv6",
        "only-v4.pkt::ipv4-mapped-ipv6",
        "only-v6.pkt::ipv6",
    }
    result.stdout.fnmatch_lines(["4/6 tests collected (2 deselected)*"])


def test_header_names_the_options_every_script_gets(pytester: pytest.Pytester) -> None:
    pytester.makefile(".pkt", x=GOOD)
    result = pytester.runpytest(
        "--collect-only",
        "-p",
        "no:cacheprovider",
        "-D",
        "A=1",
        "-DB=two",
        "--pkt-tolerance-usecs=8000",
        "--pkt-ip-version=ipv4",
    )
    result.stdout.fnmatch_lines(
        [
            "packetdrill: every script with -D A=1; -D B=two; --tolerance_usecs=8000; "
            "IP variants ipv4 only"
        ]
    )


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(
            ["-D", "SIZE"], "*-D/--pkt-define 'SIZE': expected NAME=VALUE*", id="no-value"
        ),
        pytest.param(
            ["--pkt-define=A B=1"],
            "*-D/--pkt-define 'A B=1': expected NAME=VALUE*",
            id="not-a-word",
        ),
        pytest.param(
            ["-D", "mss=1"],
            "*mss is a packetdrill keyword, which a define never replaces*",
            id="keyword",
        ),
        pytest.param(
            ["--pkt-tolerance-usecs=0"],
            "*--pkt-tolerance-usecs=0: expected a whole number*",
            id="zero-usecs",
        ),
        pytest.param(
            ["--pkt-tolerance-usecs=1_000"],
            "*--pkt-tolerance-usecs=1_000: expected a whole*",
            id="underscore-usecs",
        ),
        pytest.param(
            ["--pkt-tolerance-usecs=4ms"],
            "*--pkt-tolerance-usecs=4ms: expected a whole number*",
            id="unit-usecs",
        ),
        pytest.param(
            ["--pkt-ip-version=ipv5"], "*--pkt-ip-version: invalid choice: 'ipv5'*", id="ipv5"
        ),
    ],
)
def test_bad_option_values_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makefile(".pkt", x=GOOD)
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_vm_guest_gets_the_same_options(pytester: pytest.Pytester) -> None:
    """``pytest --kernel`` hands these to the guest's pytest with the node ids (which already
    carry the IP versions): there they must mean what they meant here."""
    options = ScriptOptions(("A=1", "B=x=y"), "8000", ("ipv6",))
    assert options.args() == [
        "--pkt-define=A=1",
        "--pkt-define=B=x=y",
        "--pkt-tolerance-usecs=8000",
    ]
    pytester.makefile(".pkt", x=GOOD)
    result = pytester.runpytest("--collect-only", "-p", "no:cacheprovider", *options.args())
    result.stdout.fnmatch_lines(
        ["packetdrill: every script with -D A=1; -D B=x=y; --tolerance_usecs=8000"]
    )


def test_a_scripts_broken_variant_is_a_strict_xfail_of_its_own_oracle(
    pytester: pytest.Pytester,
) -> None:
    """`// netregress: broken ID: `OLD` -> `NEW``: the copy with one configuration changed
    must fail (xfailed); a change the oracle cannot see XPASSes strictly (failed); OLD that is
    not in the script exactly once is a lint failure, never a satisfied xfail. The copy runs
    from the script's folder and is gone afterwards."""
    caught = "// netregress: broken big: `write(3, ..., 10)` -> `write(3, ..., 20)` sends 20\n"
    blind = "// netregress: broken same: `connect(3` -> `connect( 3` spaces only\n"
    absent = "// netregress: broken none: `sendto(3` -> `send(3` not in the script\n"
    pytester.makefile(
        ".pkt",
        **{"caught-v4": caught + GOOD, "blind-v4": blind + GOOD, "absent-v4": absent + GOOD},
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", "--pkt-ip-version=ipv4")
    result.assert_outcomes(passed=3, xfailed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "XFAIL caught-v4.pkt::ipv4-broken-big - broken variant: sends 20",
            "FAILED blind-v4.pkt::ipv4-broken-same - [[]XPASS(strict)[]] broken variant:*",
            "FAILED absent-v4.pkt::broken-none - *",
            "*absent-v4.pkt: broken none: `sendto(3` must occur exactly once outside the header*",
        ]
    )
    assert not list(pytester.path.glob(".*.pkt"))
