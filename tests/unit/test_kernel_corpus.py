# SPDX-License-Identifier: GPL-2.0-only
"""The kernel's packetdrill corpus as items: where it comes from (a tree, a folder, a Debian
``linux-source`` .deb), what its runner passes (learnt by running the runner), the items and
their markers.

The corpus here is a fake of our own making, small and shaped like the kernel's (a runner
that sources ``../../kselftest/ktap_helpers.sh`` and calls ``unshare -n packetdrill``): these
tests are about our acquisition and collection, not about the kernel."""

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from kernels.acquire.catalog import SourceKernel
from kernels.corpus.features import FEATURES, features_of
from kernels.corpus.needs import (
    ARRIVALS,
    KnobProbe,
    arrivals,
    default_congestion,
    knob_settings,
    predated,
    why_skipped,
)
from kernels.corpus.runner import RunnerProbe
from kernels.corpus.source import PACKETDRILL_DIR, extract_deb, from_directory, guest_args
from kernels.errors import KernelsError

pytest_plugins = ["pytester"]

# A runner in the kernel's shape (our own words): IP versions from the script's
# --ip_version lines, else both; a failure is an XFAIL when KSFT_MACHINE_SLOW is set.
RUNNER = """#!/bin/bash
source "$(dirname $(realpath $0))/../../kselftest/ktap_helpers.sh"
declare -A ip_args=(
	[ipv4]="--ip_version=ipv4 --local_ip=192.168.0.1 -D WHO=four"
	[ipv6]="--ip_version=ipv6 --mtu=1520 -D WHO=six"
)
script="$(basename $1)"
failfunc=ktap_test_fail
declare -a optargs
if [[ -n "${KSFT_MACHINE_SLOW}" ]]; then
	optargs+=('--tolerance_usecs=14000')
	failfunc=ktap_test_xfail
fi
versions=$(grep -E '^--ip_version=' $script | cut -d '=' -f 2)
if [[ -z $versions ]]; then versions="ipv4 ipv6"
elif [[ ! "$versions" =~ ^ipv[46]$ ]]; then
	ktap_exit_fail_msg "unsupported: $versions"
	exit 1
fi
for v in $versions; do
	unshare -n packetdrill ${ip_args[$v]} ${optargs[@]} $script > /dev/null \\
		&& ktap_test_pass $v || $failfunc $v
done
"""
SCRIPT = """`./defaults.sh`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 close(3) = 0
"""
SCRIPTS = {
    "tcp_accecn_first.pkt": SCRIPT,
    "tcp_slow_start_after-idle.pkt": "--ip_version=ipv6\n" + SCRIPT,
    "tcp_newthing_x.pkt": SCRIPT,
    "tcp_broken_versions.pkt": "--ip_version=ipv4\n--ip_version=ipv6\n" + SCRIPT,
}


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe remembers plans in the cache: these tests keep theirs to themselves."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def make_tree(root: Path, version: tuple[int, int, int] = (9, 9, 1)) -> Path:
    """A kernel-shaped tree holding a fake corpus; returns its packetdrill folder."""
    corpus = root / PACKETDRILL_DIR
    corpus.mkdir(parents=True)
    (corpus / "ksft_runner.sh").write_text(RUNNER)
    (corpus / "defaults.sh").write_text("#!/bin/bash\n")
    for name, text in SCRIPTS.items():
        (corpus / name).write_text(text)
    helpers = root / "tools/testing/selftests/kselftest/ktap_helpers.sh"
    helpers.parent.mkdir(parents=True)
    helpers.write_text("echo the kernel's helpers are never sourced by the probe; exit 9\n")
    (root / "Makefile").write_text(
        "VERSION = {}\nPATCHLEVEL = {}\nSUBLEVEL = {}\nEXTRAVERSION =\n".format(*version)
    )
    (root / "net").mkdir()
    (root / "net" / "tcp.c").write_text("/* not part of the corpus */\n")
    return corpus


def test_features_come_from_the_file_names() -> None:
    assert features_of("tcp_accecn_delivered_maxack.pkt") == ["accecn", "ecn"]
    assert features_of("tcp_slow_start_slow-start-after-idle.pkt") == ["slow_start"]
    assert features_of("tcp_fast_recovery_prr-ss-10pkt-lost-1.pkt") == ["fast_recovery"]
    assert features_of("tcp_fastopen_server_basic-rw.pkt") == ["fastopen"]
    assert features_of("tcp_dsack_mult.pkt") == ["dsack", "sack"]
    assert features_of("tcp_ooo-before-and-after-accept.pkt") == ["ooo"]
    assert features_of("tcp_tcp_info_tcp-info-rwnd-limited.pkt") == ["tcp_info"]
    assert features_of("tcp_newthing_x.pkt") == ["newthing"]  # unknown: still a marker
    assert features_of("udp_x.pkt") == []
    assert {"accecn", "fastopen", "sack", "zerocopy", "slow_start"} <= set(FEATURES)


def test_the_settings_a_script_needs_are_read_from_its_init_commands() -> None:
    text = """`./defaults.sh
sysctl -q net.ipv4.tcp_ecn=3
sysctl -q net.ipv4.tcp_rmem="4096 131072 $((32*1024*1024))"
../set_sysctls.py /proc/sys/net/ipv4/tcp_min_tso_segs=10 \\
    /proc/sys/net/ipv4/tcp_fastopen=0x402`

 0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3   // sysctl -q net.ipv4.tcp_sack=0 in a comment
"""
    assert knob_settings(text) == [
        "net/ipv4/tcp_ecn=3",
        "net/ipv4/tcp_min_tso_segs=10",
        "net/ipv4/tcp_fastopen=0x402",
    ]
    assert why_skipped({"net/ipv4/tcp_ecn=3": "EINVAL", "net/ipv4/x=1": "ENOENT"}) == (
        "this kernel lacks what the script's init commands set: "
        "net.ipv4.tcp_ecn=3: rejected (EINVAL), taken upstream since 7.0 "
        '(8ae3e8e6ceed "tcp: accecn: enable AccECN"); net.ipv4.x=1: no such sysctl'
    )


def test_a_skip_names_the_commit_only_for_the_answer_it_explains() -> None:
    lacks = "this kernel lacks what the script's init commands set: "
    assert why_skipped({"net/ipv4/tcp_rto_max_ms=1000": "ENOENT"}) == lacks + (
        "net.ipv4.tcp_rto_max_ms=1000: no such sysctl, added upstream in 6.15 "
        '(1280c26228bd "tcp: add tcp_rto_max_ms sysctl")'
    )
    # tcp_ecn itself is old and 9 was never taken: the kernel's answer stands alone.
    assert why_skipped({"net/ipv4/tcp_ecn=9": "EINVAL"}) == (
        lacks + "net.ipv4.tcp_ecn=9: rejected (EINVAL)"
    )
    assert why_skipped({"net/ipv4/tcp_ecn=3": "ENOENT"}) == (
        lacks + "net.ipv4.tcp_ecn=3: no such sysctl"
    )


def test_a_value_this_kernel_predates_is_a_skip_on_it_and_runs_from_its_release() -> None:
    """5.10 and 6.1 take tcp_ecn=3 (no upper limit before 6.18) without AccECN behind it."""
    accecn = ["net/ipv4/tcp_ecn=3", "net/ipv4/tcp_ecn_option=2"]
    assert predated(accecn, (6, 1, 176)) == (
        "this kernel (6.1.176) predates what the script's init commands set: "
        'net.ipv4.tcp_ecn=3, taken upstream since 7.0 (8ae3e8e6ceed "tcp: accecn: enable '
        'AccECN"); it takes the value without the feature behind it'
    )
    assert predated(accecn, (7, 0)) == ""
    assert predated(accecn, (7, 2, 13)) == ""
    # A knob's own arrival is the probe's to judge (a backport brings it to an old kernel).
    assert predated(["net/ipv4/tcp_shrink_window=1"], (6, 1, 59)) == ""
    assert predated(["net/ipv4/tcp_ecn=1"], (5, 10)) == ""  # classic ECN: any kernel


def test_every_arrival_names_a_release_and_a_full_commit() -> None:
    entries = tomllib.loads(ARRIVALS.read_text())["arrival"]
    assert entries
    for entry in entries:
        assert set(entry) <= {"knob", "values", "release", "commit", "subject"}, entry
        assert re.fullmatch(r"net\.[a-z0-9_.]+", entry["knob"]), entry
        assert re.fullmatch(r"[0-9]+\.[0-9]+", entry["release"]), entry
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry
        assert entry["subject"], entry
    assert len(arrivals()) == sum(len(entry.get("values", [""])) for entry in entries)


def test_the_defaults_congestion_control(tmp_path: Path) -> None:
    assert default_congestion(tmp_path) is None
    (tmp_path / "defaults.sh").write_text("sysctl -q net.ipv4.tcp_congestion_control=cubic\n")
    assert default_congestion(tmp_path) == "cubic"


def test_the_kernel_answers_each_setting_in_a_namespace_of_its_own(netns_ready: None) -> None:
    before = Path("/proc/sys/net/ipv4/tcp_ecn").read_text()
    probe = KnobProbe()
    refused = probe.refused(
        ["net/ipv4/tcp_ecn=1", "net/ipv4/tcp_ecn=99", "net/ipv4/netregress_no_such_knob=1"]
    )
    assert refused == {
        "net/ipv4/tcp_ecn=99": "EINVAL",
        "net/ipv4/netregress_no_such_knob=1": "ENOENT",
    }
    assert Path("/proc/sys/net/ipv4/tcp_ecn").read_text() == before  # ours was thrown away
    assert probe.refused(["net/ipv4/tcp_ecn=99"]) == {"net/ipv4/tcp_ecn=99": "EINVAL"}


def test_a_tree_its_selftests_or_the_corpus_folder_names_the_corpus(tmp_path: Path) -> None:
    corpus = make_tree(tmp_path)
    for given in (tmp_path, tmp_path / "tools/testing/selftests", corpus):
        found = from_directory(given)
        assert found.path == corpus
        assert found.version == "9.9.1"
    with pytest.raises(KernelsError, match="no kernel packetdrill corpus here"):
        from_directory(tmp_path / "net")


def test_a_guest_gets_the_folder_auto_means_for_its_kernel(tmp_path: Path) -> None:
    corpus = make_tree(tmp_path / "linux")
    spec = SourceKernel("net-next", tree=tmp_path / "linux")
    for given in (["--kernel-pkt-corpus", "auto"], ["--kernel-pkt-corpus=auto"]):
        assert guest_args(["-m", "sack", *given, "tests/cases"], spec, print) == [
            "-m", "sack", f"--kernel-pkt-corpus={corpus}",
            "--kernel-pkt-corpus-why=the source tree of net-next", "tests/cases",
        ]  # fmt: skip
    named = ["--kernel-pkt-corpus", "/src/x", "-k", "auto"]
    assert guest_args(named, spec, print) == named


def test_the_probe_learns_what_the_runner_passes(tmp_path: Path) -> None:
    corpus = make_tree(tmp_path)
    with RunnerProbe(corpus) as probe:
        both = probe.plan(corpus / "tcp_accecn_first.pkt", slow=False)
        pinned = probe.plan(corpus / "tcp_slow_start_after-idle.pkt", slow=True)
        refused = probe.plan(corpus / "tcp_broken_versions.pkt", slow=False)
    assert [(run.name, run.args, run.on_failure) for run in both.runs] == [
        ("ipv4", ("--ip_version=ipv4", "--local_ip=192.168.0.1", "-D", "WHO=four"), "fail"),
        ("ipv6", ("--ip_version=ipv6", "--mtu=1520", "-D", "WHO=six"), "fail"),
    ]
    assert [(run.name, run.args[-1], run.on_failure) for run in pinned.runs] == [
        ("ipv6", "--tolerance_usecs=14000", "xfail")
    ]
    assert refused.runs == () and "unsupported: ipv4 ipv6" in refused.refused
    assert not probe.root.exists()  # the stand-ins are gone


def _deb(root: Path, tree: Path | None, out: Path) -> Path:
    """A linux-source-9.9-shaped .deb: usr/src/linux-source-9.9.tar.xz holding `tree`."""
    pkg = root / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: linux-source-9.9\nVersion: 9.9.1-1\nArchitecture: all\n"
        "Maintainer: nobody <nobody@example.org>\nDescription: fake\n"
    )
    (pkg / "usr/src").mkdir(parents=True)
    top = root / "linux-source-9.9"
    if tree is not None:
        tree.rename(top)
    else:
        top.mkdir()
        (top / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n")
    subprocess.run(
        ["tar", "-C", str(root), "-cJf", str(pkg / "usr/src/linux-source-9.9.tar.xz"), top.name],
        check=True,
    )
    subprocess.run(["dpkg-deb", "-Zgzip", "--build", str(pkg), str(out)], check=True,
                   capture_output=True)  # fmt: skip
    return out


def test_a_debian_source_package_gives_only_the_corpus(tmp_path: Path) -> None:
    make_tree(tmp_path / "tree")
    deb = _deb(tmp_path / "build", tmp_path / "tree", tmp_path / "linux-source-9.9.deb")
    assert extract_deb(deb, tmp_path / "out")
    got = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*"))
    files = [name for name in got if (tmp_path / "out" / name).is_file()]
    assert files == sorted(
        [
            "Makefile",
            "tools/testing/selftests/kselftest/ktap_helpers.sh",
            *(f"{PACKETDRILL_DIR}/{name}" for name in [*SCRIPTS, "defaults.sh", "ksft_runner.sh"]),
        ]
    )
    assert from_directory(tmp_path / "out").version == "9.9.1"


def test_a_source_package_without_the_corpus_says_so(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    deb = _deb(tmp_path / "build", None, tmp_path / "old.deb")
    assert not extract_deb(deb, tmp_path / "out")


def test_items_markers_and_the_runners_arguments(pytester: pytest.Pytester, tmp_path: Path) -> None:
    corpus = make_tree(tmp_path / "linux")
    pytester.makefile(".corpus", anchor="# the kernel corpus anchor\n")
    args = ["--co", "-q", "-p", "no:cacheprovider", f"--kernel-pkt-corpus={corpus}"]
    result = pytester.runpytest(*args)
    ids = {line.strip() for line in result.outlines if "::" in line}
    assert ids == {
        "anchor.corpus::tcp_accecn_first.pkt::ipv4",
        "anchor.corpus::tcp_accecn_first.pkt::ipv6",
        "anchor.corpus::tcp_slow_start_after-idle.pkt::ipv6",
        "anchor.corpus::tcp_newthing_x.pkt::ipv4",
        "anchor.corpus::tcp_newthing_x.pkt::ipv6",
        "anchor.corpus::tcp_broken_versions.pkt::runner",
    }
    picked = pytester.runpytest(*args, "-m", "ecn and tcp and packetdrill", "--strict-markers")
    assert {line.strip() for line in picked.outlines if "::" in line} == {
        "anchor.corpus::tcp_accecn_first.pkt::ipv4",
        "anchor.corpus::tcp_accecn_first.pkt::ipv6",
    }
    new = pytester.runpytest(*args, "-m", "newthing", "--strict-markers")
    assert sum("::" in line for line in new.outlines) == 2
    header = pytester.runpytest(*args[:1], *args[2:]).stdout.str()  # no -q: the header shows
    assert "kernel packetdrill corpus: Linux 9.9.1 packetdrill selftests from directory" in header
    assert header.rstrip().count("named on the command line") == 1
    # A guest is handed the folder the host chose for its kernel, and the host's reason.
    why = "the newest corpus: bookworm-6.1 has none of its own"
    guest = pytester.runpytest(*args[:1], *args[2:], f"--kernel-pkt-corpus-why={why}")
    assert f"on kernel running {os.uname().release}: {why}" in guest.stdout.str()
    off = pytester.runpytest("--co", "-q", "-p", "no:cacheprovider")
    assert not any("::" in line for line in off.outlines)  # default: nothing collected


def test_a_script_the_runner_refuses_is_a_failing_item(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    corpus = make_tree(tmp_path / "linux")
    pytester.makefile(".corpus", anchor="")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--kernel-pkt-corpus={corpus}", "-k", "broken_versions"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the kernel's runner refuses tcp_broken_versions.pkt*"])
    assert "Traceback" not in result.stdout.str()


def test_a_missing_corpus_is_a_usage_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = pytester.runpytest("--co", f"--kernel-pkt-corpus={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kernel-pkt-corpus: *no kernel packetdrill corpus here*"])
