# SPDX-License-Identifier: GPL-2.0-only
"""Expectations: which test is a known failure on which kernel, and why."""

import re

import pytest

from kernels.errors import KernelsError
from kernels.matrix.expectations import (
    VersionRange,
    expected_failure,
    link_of,
    load_expectations,
    parse_expectations,
)  # fmt: skip

ENTRIES = """
[[expect]]
test = "tests/cases/test_tcp.py::test_wqueue*"
versions = ">=5.10, <6.6"
reason = "TCPWqueueTooBig: fixed in b617158dc096"
link = "https://git.kernel.org/linus/b617158dc096"

[[expect]]
test = "tests/cases/test_gre.py::*"
kernels = ["bullseye-5.10"]
reason = "gre in a netns needs fb_tunnels_only_for_init_net on 5.10"
"""


@pytest.mark.parametrize("version, inside", [
    ((5, 10, 223), True), ((6, 1, 176), True), ((6, 5, 99), True), ((6, 6), False),
    ((6, 6, 1), False), ((5, 9, 300), False), ((7, 2, 13), False),
])  # fmt: skip
def test_version_range_compares_on_the_bound_precision(
    version: tuple[int, ...], inside: bool
) -> None:
    assert (version in VersionRange.parse(">=5.10, <6.6")) is inside


def test_matching_by_pattern_version_and_name() -> None:
    entries = parse_expectations(ENTRIES)
    hit = expected_failure(entries, "tests/cases/test_tcp.py::test_wqueue_limit", "x", (6, 1, 176))
    assert hit is not None and hit.why == (
        "TCPWqueueTooBig: fixed in b617158dc096 (https://git.kernel.org/linus/b617158dc096)"
    )
    assert (
        expected_failure(entries, "tests/cases/test_tcp.py::test_wqueue_limit", "x", (6, 12, 107))
        is None
    )
    assert expected_failure(entries, "tests/cases/test_tcp.py::test_other", "x", (6, 1)) is None
    assert (
        expected_failure(entries, "tests/cases/test_gre.py::test_a", "bullseye-5.10", (5, 10, 223))
        is not None
    )
    assert (
        expected_failure(entries, "tests/cases/test_gre.py::test_a", "bookworm-6.1", (5, 10, 223))
        is None
    )


@pytest.mark.parametrize("text, message", [
    ("[[expect]]\ntest = 'a'\nreason = 'b'", "needs 'versions' and/or 'kernels'"),
    ("[[expect]]\ntest = 'a'\nversions = '<6'", "needs 'test'"),
    ("[[expect]]\ntest = 'a'\nreason = 'b'\nversions = 'about 6'", "bad version range"),
    ("[[expect]]\ntest = 'a'\nreason = 'b'\nkernels = 'sid'", "must be a list"),
    ("[[expect]]\ntest = 'a'\nreason = 'b'\nkernel = ['sid']", "unknown key(s) kernel"),
], ids=["no-scope", "no-reason", "bad-range", "kernels-type", "typo"])  # fmt: skip
def test_bad_expectations_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(KernelsError) as info:
        parse_expectations(text, "exp.toml")
    assert message in str(info.value) and "exp.toml" in str(info.value)


def test_shipped_expectations_parse_and_carry_reasons() -> None:
    entries = load_expectations()
    assert entries and all(entry.reason and (entry.versions or entry.kernels) for entry in entries)


def test_the_link_comes_back_out_of_the_xfail_reason() -> None:
    """What a result keeps is the reason (KCIDB's issue links the fix from it)."""
    linked, unlinked = parse_expectations(ENTRIES)
    assert link_of(linked.why) == "https://git.kernel.org/linus/b617158dc096"
    assert link_of(unlinked.why) == ""
    assert link_of("see (https://example.org/a) for more") == ""  # only the trailing link


def test_shipped_c08_entry_covers_the_good_variant_before_5_14_only() -> None:
    """The pattern's "[[]" is a literal bracket: the broken variant is never covered."""
    entries = load_expectations()
    case = (
        "tests/cases/test_c08_c09_flannel_vxlan.py::test_c08_peer_flannel_dot0_address_is_unicast"
    )
    good, bad = f"{case}[kernel-routes]", f"{case}[broken-dot0-broadcast-route]"
    hit = expected_failure(entries, good, "bullseye-5.10", (5, 10, 223))
    assert hit is not None and "94c821c74bf5" in hit.why
    assert expected_failure(entries, good, "bookworm-6.1", (6, 1, 176)) is None
    assert expected_failure(entries, bad, "bullseye-5.10", (5, 10, 223)) is None


def test_a_plain_host_run_applies_the_running_kernels_expectations(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_known="def test_old_kernel_behaviour():\n    assert False\n")
    known = pytester.path / "known.toml"
    known.write_text(
        '[[expect]]\ntest = "test_known.py::*"\nkernels = ["running"]\n'
        'reason = "known on this kernel: fixed in 0123456789ab"\n'
    )
    monkeypatch.delenv("NETREGRESS_KERNEL", raising=False)
    monkeypatch.setenv("NETREGRESS_EXPECTATIONS", str(known))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rx")
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*fixed in 0123456789ab*"])


def test_kernel_corpus_entries_follow_the_stable_backports() -> None:
    """A fix with stable backports is expected to fail on each branch only before its
    backport: tcp_close_no_rst.pkt's fix reached 5.10.246 and 6.1.156, so bullseye's 5.10.223
    runs it as a known failure and bookworm's 6.1.176 as a test that must pass."""
    entries = load_expectations()
    node = "tests/cases/kernel-packetdrill.corpus::tcp_close_no_rst.pkt::ipv6"
    for version, known in [
        ((5, 10, 223), True),
        ((5, 10, 246), False),
        ((6, 1, 155), True),
        ((6, 1, 176), False),
        ((6, 18, 44), False),
    ]:
        hit = expected_failure(entries, node, "any", version)
        assert (hit is not None) == known, version
    corpus = [e for e in entries if e.test.startswith("tests/cases/kernel-packetdrill.corpus::")]
    assert corpus
    for entry in corpus:
        assert re.fullmatch(r"https://git\.kernel\.org/linus/[0-9a-f]{40}", entry.link), entry
        assert entry.link[-40:][:12] in entry.reason, entry


def test_kernel_selftests_entries_name_a_sub_test_and_its_commit() -> None:
    """A selftests entry names one sub-test of one script (the item's node id, then the
    sub-test), so it never turns a whole script into an expected failure; its link is the
    commit the reason cites. The traceroute ICMP extensions arrived in 6.19."""
    entries = load_expectations()
    node = "tests/cases/kernel-net.selftests::traceroute.sh"
    sub = f"{node}::IPv6 traceroute with ICMP extensions"
    assert expected_failure(entries, sub, "running", (6, 18, 44)) is not None
    assert expected_failure(entries, sub, "running", (6, 19, 1)) is None
    assert expected_failure(entries, node, "running", (6, 18, 44)) is None
    selftests = [e for e in entries if e.test.startswith("tests/cases/kernel-net.selftests::")]
    assert selftests
    for entry in selftests:
        assert entry.test.count("::") == 2, entry
        assert re.fullmatch(r"https://git\.kernel\.org/linus/[0-9a-f]{40}", entry.link), entry
        assert entry.link[-40:][:12] in entry.reason, entry
