"""The pytest plugin: collection per IP variant, lint failures as items, expect-fail
headers, and what a failing script reports."""

import pytest

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
            "script line: 4",
            "expected: script packet:*udp (10)",
            "actual:   actual packet:*udp (10)",
            "pcap: *.pcap",
        ]
    )


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
