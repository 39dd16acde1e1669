# SPDX-License-Identifier: GPL-2.0-only
"""The pytest plugin as a user meets it: privileges, skips, artifacts, summary, xdist."""

import os
import subprocess
import sys

import pytest


def test_without_privileges_only_namespace_tests_error(tmp_path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x(ns):\n    pass\ndef test_parser():\n    pass\n")
    # uid 0 but with every capability dropped: what a container without CAP_NET_ADMIN sees.
    done = subprocess.run(
        [
            "setpriv",
            "--inh-caps=-all",
            "--bounding-set=-all",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "netns.pytest_plugin",
            str(tmp_path / "test_x.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "1 passed, 1 error" in out
    assert "netregress needs root or a user namespace" in out and "CAP_NET_ADMIN" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("rootdir", [None, "docs"])
def test_failure_keeps_pcap_and_prints_path(pytester: pytest.Pytester, rootdir: str | None) -> None:
    """The evidence goes under the directory pytest runs in, whatever the rootdir: a run with
    `--rootdir=docs/examples` (docs/html-report.md's demo) must leave no pcap in a docs folder."""
    options = []
    if rootdir:
        pytester.mkdir(rootdir)
        options.append(f"--rootdir={rootdir}")
    pytester.makepyfile("""
        def test_fails(veth_pair):
            with veth_pair["b"].capture("eth0", "icmp") as cap:
                veth_pair["a"].run(["ping", "-c", "1", "-W", "2", "10.0.0.2"])
            assert len(cap.packets) == 99
        def test_passes(veth_pair):
            with veth_pair["b"].capture("eth0", "icmp"):
                pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *options)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*pcaps and counters kept in *test_fails*"])
    kept = list(pytester.path.glob("artifacts/*/*test_fails*/*.pcap"))
    assert len(kept) == 1 and kept[0].stat().st_size > 24
    assert not list(pytester.path.glob("artifacts/*/*test_passes*"))
    if rootdir:
        assert not list((pytester.path / rootdir).rglob("*")), "evidence in the rootdir"


def test_missing_feature_skips_with_reason_in_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.needs("nosuchfeature")
        def test_needs_unknown():
            pass
        @pytest.mark.needs("veth")
        def test_needs_veth():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    # An unknown feature name is a usage error in the test itself, not a silent skip.
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*netregress summary*", "PASSED*test_needs_veth*"])


def test_xdist_two_workers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.parametrize("i", range(6))
        def test_pair(veth_pair, i):
            veth_pair["a"].run(["ping", "-c", "1", "-W", "2", "10.0.0.2"])
    """)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)


def test_plugins_read_the_vm_kernel_from_the_stash(pytester: pytest.Pytester) -> None:
    """Where the tests run is one typed decision in config.stash (the kernels plugin makes it
    from --kernel), not another plugin's command-line option."""
    pytester.makeconftest("""
        from netregress.session import VM_KERNEL, KernelUnderTest
        def pytest_configure(config):
            config.stash[VM_KERNEL] = KernelUnderTest(
                "bookworm-6.1", "6.1.0-50-cloud-amd64", "6.1.176-1", "tcg"
            )
    """)
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "packetdrill: builtin engine; timing calibrated inside the VM guest",
            "*netregress summary (kernel bookworm-6.1, in a VM)*",
        ]
    )
    assert "netregress: kernel" not in result.stdout.str()  # no probe of this host


def test_a_failed_assertion_about_captured_packets_shows_one_line_per_packet(
    pytester: pytest.Pytester,
) -> None:
    """A comparison of captured packets explains itself in tcpdump's words, one line per
    packet, and so does pytest's "where" line of ``len(cap.packets)``: never scapy's repr."""
    pytester.makepyfile("""
        def test_compared(veth_pair):
            with veth_pair["b"].capture("eth0", "icmp") as cap:
                veth_pair["a"].run(["ping", "-c", "1", "-W", "2", "10.0.0.2"])
            assert cap.packets == []

        def test_counted(veth_pair):
            with veth_pair["b"].capture("eth0", "icmp") as cap:
                veth_pair["a"].run(["ping", "-c", "1", "-W", "2", "10.0.0.2"])
            assert len(cap.packets) == 99
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    request = "IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id *, seq 1, length 64"
    reply = "IP 10.0.0.2 > 10.0.0.1: ICMP echo reply, id *, seq 1, length 64"
    result.stdout.fnmatch_lines(
        [
            "E       assert [[]2 packets[]] == [[][]]",
            "E         left: 2 packets",
            f"E           {request}",
            f"E           {reply}",
            "E         right: [[][]]",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E        +  where 2 = len(<2 packets:",
            f"E             {request}",
            f"E             {reply}",
            "E           >)",
            "E        +    where <2 packets:",
            f"E             {request}",
            f"E             {reply}",
            "E           > = <capture on eth0 in *-b-* (icmp)>.packets",
        ]
    )
    assert "<Ether" not in result.stdout.str()


def test_a_session_started_inside_a_worker_keeps_its_own_evidence_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pytester session inside an xdist worker inherits the run's PYTEST_XDIST_TESTRUNUID;
    two of them running the same script on two workers once shared one folder and removed
    each other's pcap mid-run. Only xdist's own workers share the run's folder."""
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "sharedrunuid")
    pytester.makepyfile("""
        from netregress.session import ARTIFACTS_ROOT

        def test_root(request):
            print("ROOT", request.config.stash[ARTIFACTS_ROOT])
    """)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    root = next(line for line in result.outlines if "ROOT " in line)
    assert "sharedru" not in root and root.endswith(f"run-{os.getpid()}")
