# SPDX-License-Identifier: GPL-2.0-only
"""The kernel's network shell selftests as items: their output read as sub-tests, the
kselftest runner's conventions (settings timeout, exit 4), the troubles that are not the
kernel's (a too-old iproute2, a missing link type), the verdict with known differences, the
containment of a host run, and the items of a tree.

The scripts here are fakes of our own making in temporary folders, shaped like the kernel's
(they print ``TEST: … [ OK ]`` lines, exit 4 to skip): these tests are about our runner,
reader and judge, not about the kernel. The containment test runs real ``ip``/``sysctl``
commands inside the container and proves, with netns/rootstate.py, that the root namespace
did not see them."""

from pathlib import Path, PurePosixPath

import pytest

from kernels.acquire.catalog import SourceKernel
from kernels.matrix.expectations import Expectation, VersionRange
from kernels.selftests.build import Helpers, read_helpers
from kernels.selftests.output import SubResult, Verdict, parse_line, sub_results
from kernels.selftests.protocols import needs
from kernels.selftests.run import DEFAULT_TIMEOUT, ScriptRun, run_script, settings_timeout
from kernels.selftests.scripts import makefile_scripts, scripts, subsystem, uncontained
from kernels.selftests.source import PART, from_directory, guest_args
from kernels.selftests.verdict import Outcome, judge
from netns import rootstate
from netns.variants import broken

pytest_plugins = ["pytester"]

NET = "tools/testing/selftests/net"
PASS, FAIL = Verdict.PASS, Verdict.FAIL


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("    TEST: IPv4 route add / append          [ OK ]", ("IPv4 route add / append", PASS)),
        ("TEST: ping with MTU 1500                      [FAIL]", ("ping with MTU 1500", FAIL)),
        ("TEST: vxlan over ipv6                         [SKIP]", ("vxlan over ipv6", Verdict.SKIP)),
        ("TEST: flush with older kernel   [XFAIL]", ("flush with older kernel", Verdict.XFAIL)),
        ("ok 3 selftests: net: a check", ("selftests: net: a check", Verdict.PASS)),
        ("not ok 4 another check", ("another check", Verdict.FAIL)),
        ("ok 5 skipped check # SKIP no vrf", ("skipped check", Verdict.SKIP)),
        ("PASS: bridge setup", ("bridge setup", Verdict.PASS)),
        ("FAIL: route get", ("route get", Verdict.FAIL)),
        ("INFO: nothing to judge", None),
        ("TEST: without a verdict", None),
        ("1..12", None),
        broken("   FAIL: indented words are output", ("indented words are output", Verdict.FAIL),
               id="indented-word",
               why="rtnetlink.sh's words start a line; an indented one is a command's output"),
        broken("Ping: TEST: x [ OK ] and more", ("x", Verdict.PASS), id="mid-line",
               why="a TEST line is a whole line: one quoted inside another is not a result"),
    ],
)  # fmt: skip
def test_a_line_reports_a_sub_test(line: str, parsed: tuple[str, Verdict] | None) -> None:
    assert parse_line(line) == parsed


def test_each_trouble_belongs_to_the_result_after_it() -> None:
    log = "iproute2\tip link add x\tGarbage instead of arguments\n"
    second = "link-type\tip link add y type vrf\tvrf\n"
    lines = [
        ("TEST: first [ OK ]", 0),
        ("noise", len(log)),
        ("TEST: second [FAIL]", len(log)),
        ("TEST: third [FAIL]", len(log)),
        ("TEST: fourth [FAIL]", len(log + second)),
    ]
    results, stray = sub_results(lines, log + second + "missing\tjq\t\n")
    assert results == [
        SubResult("first", Verdict.PASS),
        SubResult("second", Verdict.FAIL, (log.strip(),)),
        SubResult("third", Verdict.FAIL),
        SubResult("fourth", Verdict.FAIL, (second.strip(),)),
    ]
    assert stray == ["missing\tjq\t"]
    assert results[1].blamed_elsewhere and not results[2].blamed_elsewhere


def test_a_refused_link_type_is_a_trouble_of_every_later_result() -> None:
    """The script's topology lacks the device from then on; a usage error is not sticky."""
    log = "link-type\tip link add d0 type dummy\tdummy\n"
    usage = "iproute2\tip x\tGarbage instead of arguments\n"
    lines = [("TEST: a [FAIL]", len(log)), ("TEST: b [FAIL]", len(log + usage)),
             ("TEST: c [FAIL]", len(log + usage))]  # fmt: skip
    results, _ = sub_results(lines, log + usage)
    assert [len(result.troubles) for result in results] == [1, 2, 1]
    assert all(log.strip() in result.troubles for result in results)


@pytest.mark.parametrize(
    ("settings", "timeout"),
    [(None, DEFAULT_TIMEOUT), ("timeout=120\n", 120.0), ("timeout=0\n", None), ("# none\n", 45.0)],
)
def test_the_settings_timeout(tmp_path: Path, settings: str | None, timeout: float | None) -> None:
    if settings is not None:
        (tmp_path / "settings").write_text(settings)
    assert settings_timeout(tmp_path) == timeout


def _script(folder: Path, body: str, name: str = "fake.sh") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/bash\n" + body)
    script.chmod(0o755)
    return script


def _never(name: str) -> Expectation | None:
    return None


@pytest.mark.parametrize(
    ("body", "outcome", "words"),
    [
        ("echo 'TEST: a [ OK ]'; echo 'TEST: b [ OK ]'\n", Outcome.PASS, "2 sub-tests"),
        ("echo 'SKIP: jq not installed'; exit 4\n", Outcome.SKIP, "4): SKIP: jq not installed"),
        ("echo 'TEST: a [ OK ]'; echo 'TEST: b [FAIL]'; echo 'TEST: c [FAIL]'; exit 1\n",
         Outcome.FAIL, "2 of 3 sub-tests failed: b; c"),
        ("echo 'TEST: a [ OK ]'; echo oops; exit 1\n", Outcome.FAIL,
         "exit 1 with no failed sub-test: oops"),
        ("echo 'TEST: a [FAIL]'; exit 4\n", Outcome.FAIL, "1 of 1 sub-tests failed: a"),
        ("nr-no-such-tool -x; echo 'TEST: a [FAIL]'; exit 1\n", Outcome.SKIP,
         "'nr-no-such-tool' is not installed or was not built"),
        ("echo 'TEST: a [ OK ]'; sleep 30\n", Outcome.FAIL,
         "timed out after 1 s (settings); 1 sub-tests"),
        broken("echo 'TEST: a [ OK ]'; echo 'TEST: b [FAIL]'; exit 0\n", Outcome.PASS, "",
               id="exit-0-hides",
               why="a failed sub-test fails the item even when the script exits 0"),
    ],
)  # fmt: skip
def test_a_run_is_judged_by_its_exit_and_its_sub_tests(
    tmp_path: Path, body: str, outcome: Outcome, words: str
) -> None:
    script = _script(tmp_path, body)
    timeout = 1.0 if "sleep" in body else 30.0
    judgement = judge(
        run_script(script, timeout=timeout, contained=False), _never, "6.1.0", timeout
    )
    assert judgement.outcome == outcome
    assert words in judgement.message


# A check that fails because of the command it ran: a usage the iproute2 of the machine does
# not know (our own `frobnicate` keyword stands for a newer iproute2's), or the kernel's answer.
_IP_CHECK = """
if ip link set dev lo {words} 2>/dev/null; then
	echo 'TEST: set a link option [ OK ]'
else
	echo 'TEST: set a link option [FAIL]'
	exit 1
fi
"""


@pytest.mark.parametrize(
    ("words", "outcome"),
    [
        ("frobnicate on", Outcome.SKIP),
        broken("nonexistent0 up", Outcome.SKIP, id="kernel-refusal",
               why="`ip link set dev lo nonexistent0` is a usage error, but a missing device is "
                   "the kernel's answer: a kernel failure, never blamed on iproute2"),
    ],
)  # fmt: skip
def test_a_too_old_iproute2_is_a_skip_naming_it(
    tmp_path: Path, words: str, outcome: Outcome
) -> None:
    if words.startswith("nonexistent0"):
        body = _IP_CHECK.replace("lo {words}", "nonexistent0 up")
    else:
        body = _IP_CHECK.format(words=words)
    script = _script(tmp_path, body)
    run = run_script(script, timeout=30.0, contained=False)  # it changes nothing: a parse error
    judgement = judge(run, _never, "6.1.0", 30.0)
    assert judgement.outcome == outcome
    assert "iproute2 6.1.0 is too old for the script (`ip link set dev lo frobnicate on`" in (
        judgement.message
    )


_LINK_TYPE = """
if ! ip link add nrksft0 type nr_no_such_type; then
	echo 'TEST: a device the kernel has no type for [FAIL]'
	exit 1
fi
"""


@pytest.mark.needs_root("the stand-in's `ip link add` runs in a namespace of its own")
def test_a_link_type_the_kernel_lacks_is_a_skip_naming_it(tmp_path: Path) -> None:
    run = run_script(_script(tmp_path, _LINK_TYPE), timeout=30.0, contained=True)
    judgement = judge(run, _never, "6.1.0", 30.0)
    assert judgement.outcome == Outcome.SKIP
    assert "the kernel has no 'nr_no_such_type' link type (`ip link add nrksft0" in (
        judgement.message
    )


def _known(*names: str) -> Expectation:
    return Expectation(
        test="*::fake.sh::(" + "|".join(names) + ")",
        reason="a fix this kernel lacks: 0123456789ab ('net: fix it')",
        versions=VersionRange.parse("<99.0"),
    )


def _run(*results: tuple[str, Verdict], code: int = 1) -> ScriptRun:
    subs = tuple(SubResult(name, verdict) for name, verdict in results)
    return ScriptRun(code, "", subs, (), 0.1)


def test_known_differences_are_judged_per_sub_test() -> None:
    def known(name: str) -> Expectation | None:
        return _known("b") if name == "b" else None

    run = _run(("a", Verdict.PASS), ("b", Verdict.FAIL))
    expected = judge(run, known, "6.1.0", 30.0)
    assert expected.outcome == Outcome.XFAIL and "0123456789ab" in expected.message
    also = judge(_run(("b", Verdict.FAIL), ("c", Verdict.FAIL)), known, "6.1.0", 30.0)
    assert also.outcome == Outcome.FAIL and "1 of 2 sub-tests failed: c" in also.message
    fixed = judge(_run(("b", Verdict.PASS), code=0), known, "6.1.0", 30.0)
    assert fixed.outcome == Outcome.FAIL and "narrow the entry" in fixed.message
    inherited = ("link-type\tip link add red type vrf\tvrf: Error: Unknown device type.",)
    blamed = ScriptRun(1, "", (SubResult("b", FAIL, inherited),), (), 0.1)
    assert judge(blamed, known, "6.1.0", 30.0).outcome == Outcome.XFAIL  # the entry is specific
    alone = judge(blamed, _never, "6.1.0", 30.0)
    assert alone.outcome == Outcome.SKIP and "the kernel has no 'vrf' link type" in alone.message


_ESCAPE = """
sysctl -qw net.ipv4.ip_forward=1
ip link add nrksft0 type veth peer name nrksft1
ip netns add nrksftns
sysctl -qw kernel.printk_ratelimit=9 2>/dev/null && echo 'TEST: wrote a global sysctl [FAIL]'
forward=$(sysctl -n net.ipv4.ip_forward)
echo "inside: forward=$forward links=$(ip -o link | wc -l) ns=$(ip netns list)"
echo 'TEST: configured a namespace of its own [ OK ]'
"""


@pytest.mark.needs_root("unshares namespaces and mounts inside them as the kselftest host run does")
def test_a_contained_script_leaves_the_root_namespace_as_it_was(tmp_path: Path) -> None:
    script = _script(tmp_path, _ESCAPE)
    ratelimit = Path("/proc/sys/kernel/printk_ratelimit").read_text()
    before = rootstate.snapshot()
    run = run_script(script, timeout=30.0, contained=True)
    diff, _ = rootstate.compare(before, rootstate.snapshot())
    # it did run, and changed its own namespace: the checks below are not vacuous
    assert "inside: forward=1 links=3 ns=nrksftns" in run.output, run.output
    assert [(r.name, r.verdict) for r in run.results] == [
        ("configured a namespace of its own", Verdict.PASS)
    ]
    assert diff == ""
    assert Path("/proc/sys/kernel/printk_ratelimit").read_text() == ratelimit
    assert not Path("/run/netns/nrksftns").exists()


def test_the_compare_sees_a_changed_root_namespace() -> None:
    """The oracle above can fail: a changed sysctl line is a difference."""
    before = rootstate.snapshot()
    after = dict(before, sysctls=before["sysctls"].replace(" = 0", " = 1", 1))
    assert rootstate.compare(before, after)[0] != ""


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("echo 1 > /sys/bus/netdevsim/new_device\n", "creates netdevsim devices"),
        ("ip link add a type veth\nsysctl -wq kernel.panic=1\n",
         "changes global sysctls (kernel.*, vm.*) (line 2"),
        ("mount -t debugfs none /sys/kernel/debug\n", "uses debugfs"),
        ("sysctl -w net.ipv4.ip_forward=1\nip link add a type veth\n", ""),
    ],
)  # fmt: skip
def test_a_script_that_cannot_be_contained_is_told_by_its_text(text: str, why: str) -> None:
    found = uncontained(text)
    assert (why in found) if why else found == ""


def test_the_makefile_lists_the_scripts_and_their_markers(tmp_path: Path) -> None:
    net = tmp_path / NET
    (net / "forwarding").mkdir(parents=True)
    (net / "Makefile").write_text(
        "TEST_PROGS := \\\n\tfib_tests.sh \\\n\trtnetlink.sh\n"
        "TEST_PROGS += test_vxlan_mdb.sh $(EXTRA)\n"
        "TEST_GEN_PROGS := nettest\n"
    )
    (net / "forwarding" / "Makefile").write_text("TEST_PROGS = bridge_igmp.sh router.sh\n")
    assert makefile_scripts(net / "Makefile") == [
        "fib_tests.sh",
        "rtnetlink.sh",
        "test_vxlan_mdb.sh",
    ]
    names = scripts(net)
    assert names == ["fib_tests.sh", "rtnetlink.sh", "test_vxlan_mdb.sh",
                     "forwarding/bridge_igmp.sh", "forwarding/router.sh"]  # fmt: skip
    assert [subsystem(name) for name in names] == [
        "routing",
        "routing",
        "vxlan",
        "bridge",
        "routing",
    ]
    assert subsystem("udpgso.sh") == "udp" and subsystem("so_txtime.sh") is None


def test_the_source_part_keeps_what_the_build_needs() -> None:
    keep = ["Makefile", f"{NET}/fib_tests.sh", "include/uapi/linux/if_link.h",
            "scripts/unifdef.c", "arch/x86/include/uapi/asm/socket.h"]  # fmt: skip
    drop = [
        "drivers/net/dummy.c",
        "arch/arm64/Makefile",
        "Documentation/index.rst",
        "net/core/dev.c",
    ]
    assert [PART.wanted(PurePosixPath(name)) for name in keep] == [True] * len(keep)
    assert [PART.wanted(PurePosixPath(name)) for name in drop] == [False] * len(drop)


def _tree(root: Path) -> Path:
    """A kernel-shaped tree: a top Makefile whose headers_install installs a header, and a net
    folder with three scripts (a pass, a failure, a skip) and one in guests only."""
    root.mkdir(parents=True)
    (root / "Makefile").write_text(
        "VERSION = 9\nPATCHLEVEL = 9\nSUBLEVEL = 1\n"
        "headers_install:\n\tmkdir -p usr/include/linux && touch usr/include/linux/if.h\n"
    )
    net = root / NET
    _script(net, "echo 'TEST: a [ OK ]'\n", "fib_tests.sh")
    _script(net, "echo 'TEST: a [ OK ]'; echo 'TEST: b [FAIL]'; exit 1\n", "test_vxlan_x.sh")
    _script(net, "echo 'SKIP: socat not installed'; exit 4\n", "udpgso.sh")
    _script(net, "echo 1 > /sys/bus/netdevsim/new_device\n", "netdevice.sh")
    (net / "lib.sh").write_text("# the library\n")
    (net / "Makefile").write_text(
        "TEST_PROGS := fib_tests.sh test_vxlan_x.sh udpgso.sh netdevice.sh\n"
        "TEST_GEN_PROGS := helper\nall:\n\techo 'int main(){return 0;}' | cc -x c - -o helper\n"
    )
    return root


@pytest.mark.needs_root("the items run their scripts contained (unshare, mounts)")
def test_items_markers_and_verdicts(pytester: pytest.Pytester, tmp_path: Path) -> None:
    tree = _tree(tmp_path / "linux")
    assert from_directory(tree / NET).top == tree
    pytester.makefile(".selftests", anchor="# the selftests anchor\n")
    args = ["-p", "no:cacheprovider", f"--kernel-selftests={tree}", "--kernel-selftests-set=all"]
    collected = pytester.runpytest("--co", "-q", *args, "-m", "routing", "--strict-markers")
    assert {line.strip() for line in collected.outlines if "::" in line} == {
        "anchor.selftests::fib_tests.sh"
    }
    assert (tree / NET / "helper").exists()  # built once, from the tree
    result = pytester.runpytest("-rA", *args, "-p", "netns.pytest_plugin")
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    out = result.stdout.str()
    assert "test_vxlan_x.sh: 1 of 2 sub-tests failed: b" in out
    assert "the script skips (exit 4): SKIP: socat not installed" in out
    assert "runs in VM guests only: it creates netdevsim devices" in out
    assert "kernel selftests: Linux 9.9.1 network selftests from directory" in out
    fast = pytester.runpytest("--co", "-q", *args[:2])
    assert not [line for line in fast.outlines if "::" in line]  # not in the fast set


_NO_SCTP = "protocol\tSCTP\tProtocol not supported"


@pytest.mark.parametrize(
    ("name", "trouble"),
    [
        ("ip_local_port_range.ip4_stcp.get_port_range", _NO_SCTP),
        ("sctp_vrf: client in vrf", _NO_SCTP),
        ("ip_local_port_range.ip4_tcp.get_port_range", ""),
        broken("ip_local_port_range.ip6_mptcp.get_port_range", _NO_SCTP,
               id="other-protocol", why="an MPTCP check does not need SCTP"),
    ],
)  # fmt: skip
def test_a_sub_test_named_for_a_missing_protocol_is_not_judged(name: str, trouble: str) -> None:
    assert needs(name, {"SCTP": "Protocol not supported"}) == trouble
    failed = SubResult(name, FAIL, (trouble,) if trouble else ())
    judgement = judge(ScriptRun(1, "", (failed,), (), 0.1), _never, "6.1.0", 30.0)
    assert judgement.outcome == (Outcome.SKIP if trouble else Outcome.FAIL)
    if trouble:
        assert "the kernel has no SCTP (socket(): Protocol not supported)" in judgement.message


def test_a_guest_gets_the_tree_auto_means_for_its_kernel_built(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "linux")
    spec = SourceKernel("net-next", tree=tree)
    args = guest_args(["-m", "vxlan", "--kernel-selftests", "auto", "tests/cases"], spec, print)
    why = "--kernel-selftests-why=the source tree of net-next"
    assert args == ["-m", "vxlan", f"--kernel-selftests={tree}", why, "tests/cases"]
    assert read_helpers(tree / NET) == Helpers(("helper",), {})  # built on the host, for it
    named = ["--kernel-selftests", "/src/x", "-k", "auto"]
    assert guest_args(named, spec, print) == named


def test_a_helper_object_the_build_left_out_is_named() -> None:
    lines = [("Missing lib/xdp_dummy.bpf.o. Run 'make' first", 0), ("TEST: xdp [FAIL]", 0)]
    results, _ = sub_results(lines, "")
    judgement = judge(ScriptRun(1, "", tuple(results), (), 0.1), _never, "6.1.0", 30.0)
    assert judgement.outcome == Outcome.SKIP
    assert "'lib/xdp_dummy.bpf.o' is not installed or was not built" in judgement.message
