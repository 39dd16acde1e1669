# SPDX-License-Identifier: GPL-2.0-only
"""scripts/conformance itself: real runs of tiny scripts of our own in a tmp corpus.

The reference side is either a real packetdrill binary (``$PACKETDRILL``, skipped without
one) or a reference JSON we write on purpose with wrong verdicts, which must show up as a
reproducible disagreement and, for a script the builtin engine passes, as a false pass.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.corpus import CorpusError, find_jobs
from conformance.outcome import cause, first_error, from_result

REPO = Path(__file__).resolve().parents[2]
PASSING = """\
    0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3
   +0 bind(3, ..., ...) = 0
   +0 close(3) = 0
"""
FAILING = """\
    0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3
   +0 close(3) = 7
"""
MARKED = (
    """\
// netregress: expect-fail: Expected result 7 but got 0
--ip_version=ipv4
"""
    + FAILING
)


def conformance(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / "pass-v4.pkt").write_text(PASSING)
    (folder / "sub" / "fail-v4.pkt").write_text(FAILING)
    return folder


def record_wrong_reference(corpus: Path, tmp_path: Path) -> Path:
    """A reference JSON whose recorded verdicts are the opposite of the builtin engine's."""
    out = tmp_path / "builtin.json"
    done = conformance("--corpus", corpus, "--ip-version", "4", "--out", out)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    doc["reference"] = {"kind": "binary", "binary": "/nowhere/packetdrill"}
    doc["record_command"] = "scripts/conformance --corpus X --reference B --out ref.json"
    for entry in doc["entries"]:
        builtin = entry["runs"]["builtin"]
        flipped = (
            {
                "verdict": "FAIL",
                "first_error": "pass-v4.pkt:3: made-up failure",
                "seconds": 0.1,
                "message": "pass-v4.pkt:3: made-up failure",
            }
            if builtin["verdict"] == "PASS"
            else {"verdict": "PASS", "first_error": "", "seconds": 0.1, "message": ""}
        )
        entry["runs"] = {"reference": flipped}
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(doc))
    return reference


def test_builtin_only_run_writes_verdicts_and_environment(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    done = conformance("--corpus", corpus, "--ip-version", "4", "--out", out)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    runs = {(e["script"], e["variant"]): e["runs"]["builtin"] for e in doc["entries"]}
    assert set(runs) == {("pass-v4.pkt", "ipv4"), ("sub/fail-v4.pkt", "ipv4")}
    assert runs["pass-v4.pkt", "ipv4"]["verdict"] == "PASS"
    failed = runs["sub/fail-v4.pkt", "ipv4"]
    assert failed["verdict"] == "FAIL"
    assert failed["first_error"].startswith("fail-v4.pkt:2: ")
    assert "Expected result 7" in failed["first_error"]
    env = doc["environment"]
    assert env["kernel_release"] == os.uname().release
    assert "tcp_congestion_control" in env["fresh_namespace"]["sysctl_defaults"]
    assert env["fresh_namespace"]["congestion_control_settable"]
    # Progress, one line per run when stderr is not a terminal.
    assert done.stderr.count("builtin   ") == 2


def test_against_a_wrong_reference_reports_disagreement_and_false_pass(
    corpus: Path, tmp_path: Path
) -> None:
    reference = record_wrong_reference(corpus, tmp_path)
    out = tmp_path / "against.json"
    done = conformance(
        "--corpus",
        corpus,
        "--ip-version",
        "4",
        "--against",
        reference,
        "--reruns",
        "2",
        "--out",
        out,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FALSE PASSES (builtin PASS, reference FAIL every time): 1" in done.stdout
    assert "false pass: made-up failure" in done.stdout
    assert "false fail: runtime error in close call: Expected result N but got N" in done.stdout
    doc = json.loads(out.read_text())
    summary = doc["summary"]
    assert summary["false_passes"] == ["pass-v4.pkt [ipv4]"]
    assert (summary["compared"], summary["agreed"], summary["reproducible"]) == (2, 0, 2)
    entry = next(e for e in doc["entries"] if e["script"] == "pass-v4.pkt")
    assert entry["kind"] == "false pass" and entry["reproducible"] is True
    assert entry["rerun"]["verdicts"]["builtin"] == ["PASS", "PASS"]


def test_against_the_right_reference_agrees(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "builtin.json"
    assert conformance("--corpus", corpus, "--ip-version", "4", "--out", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["reference"] = {"kind": "binary", "binary": "/nowhere/packetdrill"}
    for entry in doc["entries"]:
        entry["runs"] = {"reference": entry["runs"]["builtin"]}
    out.write_text(json.dumps(doc))
    done = conformance("--corpus", corpus, "--ip-version", "4", "--against", out)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "false passes: 0" in done.stdout


def test_stale_reference_names_the_script_and_the_record_command(
    corpus: Path, tmp_path: Path
) -> None:
    reference = record_wrong_reference(corpus, tmp_path)
    (corpus / "pass-v4.pkt").write_text(PASSING + "   +0 close(3) = -1 EBADF (Bad fd)\n")
    (corpus / "new-v4.pkt").write_text(PASSING)
    done = conformance("--corpus", corpus, "--ip-version", "4", "--against", reference)
    assert done.returncode == 2
    assert "pass-v4.pkt [ipv4]: script changed since it was recorded" in done.stderr
    assert "new-v4.pkt [ipv4]: not in the reference" in done.stderr
    assert (
        "re-record with: scripts/conformance --corpus X --reference B --out ref.json" in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_expect_fail_marker_matching_one_engine_only_is_a_disagreement(tmp_path: Path) -> None:
    corpus = tmp_path / "ours"
    corpus.mkdir()
    (corpus / "marked.pkt").write_text(MARKED)
    out = tmp_path / "builtin.json"
    done = conformance(
        "--corpus", corpus, "--conventions", "ours", "--ip-version", "all", "--out", out
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert [e["variant"] for e in doc["entries"]] == ["ipv4"]  # the pinned variant
    doc["reference"] = {"kind": "binary", "binary": "/nowhere/packetdrill"}
    entry = doc["entries"][0]
    entry["runs"] = {
        "reference": {
            "verdict": "FAIL",
            "first_error": "marked.pkt:4: other",
            "seconds": 0.1,
            "message": "marked.pkt:4: other words",
        }
    }
    out.write_text(json.dumps(doc))
    done = conformance(
        "--corpus",
        corpus,
        "--conventions",
        "ours",
        "--ip-version",
        "all",
        "--against",
        out,
        "--reruns",
        "1",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "expect-fail marker matches only builtin" in done.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--corpus", "/nonexistent-corpus"], "corpus folder not found: /nonexistent-corpus"),
        (["--reference", "/nonexistent/packetdrill"], "reference binary not found"),
        (["--against", "/nonexistent.json"], "cannot read /nonexistent.json"),
        (["--args", "oops"], "expected --name[=value] and -D NAME=VALUE words"),
    ],
)
def test_bad_input_is_status_2_with_a_message(corpus: Path, args: list[str], message: str) -> None:
    full = ["--corpus", str(corpus), *args] if args[0] != "--corpus" else args
    done = conformance(*full)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_empty_corpus_is_bad_input(tmp_path: Path) -> None:
    done = conformance("--corpus", tmp_path)
    assert done.returncode == 2 and "no *.pkt scripts under" in done.stderr


def test_variants_follow_upstream_naming_and_our_pins(tmp_path: Path) -> None:
    for name in ("a.pkt", "b-v4.pkt", "c-v6.pkt"):
        (tmp_path / name).write_text(PASSING)
    (tmp_path / "d.pkt").write_text("--ip_version=ipv6\n" + PASSING)

    def chosen(convention: str, ip_version: str) -> list[str]:
        return [job.key for job in find_jobs(tmp_path, convention, ip_version)]

    assert chosen("upstream", "both") == [
        "a.pkt [ipv4]",
        "a.pkt [ipv6]",
        "b-v4.pkt [ipv4]",
        "c-v6.pkt [ipv6]",
        "d.pkt [ipv4]",
        "d.pkt [ipv6]",
    ]
    assert chosen("ours", "both") == [
        "a.pkt [ipv4]",
        "a.pkt [ipv6]",
        "b-v4.pkt [ipv4]",
        "c-v6.pkt [ipv6]",
        "d.pkt [ipv6]",
    ]
    job = find_jobs(tmp_path, "upstream", "6")[0]
    assert ("define", "TFO_COOKIE=c1d1e9742a47a9bc") in job.options
    assert ("send_omit_free", None) in job.options
    replaced = find_jobs(
        tmp_path, "upstream", "4", variant_args={"ipv4": "--ip_version=ipv4 -D CODE=x"}
    )[0]
    assert replaced.options[:2] == [("ip_version", "ipv4"), ("define", "CODE=x")]
    assert ("send_omit_free", None) in replaced.options


# A kernel-shaped runner of our own: its runs (IPv6 first), its arguments, and one script it
# refuses. --conventions kernel must take all of it from the runner, nothing from our tables.
KSFT_RUNNER = """#!/bin/bash
source "$(dirname $(realpath $0))/../../kselftest/ktap_helpers.sh"
script="$(basename $1)"
if [ "$script" = refused.pkt ]; then
	ktap_exit_fail_msg "not this one"
	exit 1
fi
for v in ipv6 ipv4; do
	unshare -n packetdrill --ip_version=$v -D WHO=$v $script > /dev/null \\
		&& ktap_test_pass $v || ktap_test_fail $v
done
"""


def test_kernel_conventions_are_what_the_corpus_runner_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs and arguments are learnt from the corpus's own ksft_runner.sh (no naming
    rule, no --send_omit_free); a script it refuses is one run neither engine makes."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the probe's plans
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a-v4.pkt").write_text(PASSING)
    (corpus / "refused.pkt").write_text(FAILING)  # the runner's plans are cached by content
    (corpus / "ksft_runner.sh").write_text(KSFT_RUNNER)
    jobs = find_jobs(corpus, "kernel", "all")
    assert [job.key for job in jobs] == [
        "a-v4.pkt [ipv6]",
        "a-v4.pkt [ipv4]",
        "refused.pkt [runner]",
    ]
    assert jobs[0].options == [("ip_version", "ipv6"), ("define", "WHO=ipv6")]
    assert jobs[2].not_run == "refuses it: not this one"
    assert [job.key for job in find_jobs(corpus, "kernel", "4")] == [
        "a-v4.pkt [ipv4]",
        "refused.pkt [runner]",
    ]
    (corpus / "ksft_runner.sh").unlink()
    with pytest.raises(CorpusError, match="no ksft_runner.sh"):
        find_jobs(corpus, "kernel", "all")


def test_a_reference_that_broke_crashed_and_is_not_compared() -> None:
    from conformance.compare import compared
    from packetdrill.result import RunResult

    crashed = from_result(
        RunResult(
            "/a/x.pkt",
            False,
            "assertion n >= 8 failed at /s/code.c line 148\n/a/x.pkt: killed by signal 6",
            exit_status=-6,
        )
    )
    assert (crashed.verdict, crashed.first_error) == (
        "CRASH",
        "assertion n >= 8 failed at code.c line 148",
    )
    asserted = from_result(
        RunResult(
            "/a/x.pkt",
            False,
            "sysctl: cannot stat /proc/sys/y\nassertion len >= 8 failed at code.c line 148",
            exit_status=1,
        )
    )
    assert asserted.verdict == "CRASH"
    passed = from_result(RunResult("/a/x.pkt", True))
    assert not compared(passed, crashed) and compared(crashed, passed)


def test_first_error_and_cause_drop_paths_lines_and_numbers() -> None:
    message = (
        "sysctl: noise\n/a/b/x.pkt:12: error handling packet: timing error: "
        "expected outbound packet at 0.100 sec but happened at 0.120 sec\n"
    )
    line = first_error(message)
    assert line.startswith("x.pkt:12: error handling packet")
    assert first_error(
        "sysctl: cannot stat /proc/sys/x: No such file\n"
        "assertion len >= 3 failed at /src/code.c line 148\n"
    ) == ("assertion len >= 3 failed at code.c line 148")
    from conformance.outcome import Outcome

    assert cause(Outcome("FAIL", line)) == (
        "error handling packet: timing error: expected outbound packet at N sec but "
        "happened at N sec"
    )


@pytest.mark.skipif(
    not os.path.isfile(os.environ.get("PACKETDRILL", "")),
    reason="no reference binary: set PACKETDRILL=/path/to/packetdrill",
)
def test_real_binary_agrees_on_tiny_scripts(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "real.json"
    done = conformance(
        "--corpus", corpus, "--reference", os.environ["PACKETDRILL"], "--jobs", "2", "--out", out
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(out.read_text())["summary"]
    assert summary["passed"] == {"builtin": 1, "reference": 1}
    assert summary["agreed"] == summary["compared"] == 2


def test_build_reference_names_missing_tools(tmp_path: Path) -> None:
    tree = tmp_path / "packetdrill"
    tree.mkdir()
    (tree / "configure").write_text("#!/bin/sh\n")
    (tree / "packetdrill.c").write_text("int main(void) { return 0; }\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "build-reference", "--source", str(tree)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PATH": str(empty),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        },
    )
    assert done.returncode == 2
    assert "missing build tools: bison, flex, make, gcc" in done.stderr


def test_build_reference_rejects_a_folder_that_is_not_packetdrill(tmp_path: Path) -> None:
    done = conformance("build-reference", "--source", tmp_path)
    assert done.returncode == 2
    assert "not a packetdrill source tree" in done.stderr


def test_skip_marker_skips_both_engines_and_is_not_compared(tmp_path: Path) -> None:
    corpus = tmp_path / "ours"
    corpus.mkdir()
    (corpus / "needs-no-veth.pkt").write_text(
        "// netregress: skip-if-kernel-has: veth\n--ip_version=ipv4\n" + FAILING
    )
    out = tmp_path / "run.json"
    done = conformance("--corpus", corpus, "--conventions", "ours", "--out", out)
    assert done.returncode == 0, done.stderr
    entry = json.loads(out.read_text())["entries"][0]
    assert entry["runs"]["builtin"] == {
        "verdict": "SKIP",
        "first_error": "kernel has veth",
        "seconds": 0.0,
        "message": "",
    }


def test_a_reference_flake_settled_by_a_rerun_is_not_held_against_the_builtin(
    corpus: Path, tmp_path: Path
) -> None:
    """A recording where the binary failed once and passed when re-run alone keeps the
    re-run's verdict as the reference, not the flake."""
    reference = record_wrong_reference(corpus, tmp_path)
    doc = json.loads(reference.read_text())
    for entry in doc["entries"]:
        flake = entry["runs"]["reference"]  # the opposite of the builtin's verdict
        settled = {
            "verdict": "PASS" if flake["verdict"] == "FAIL" else "FAIL",
            "first_error": "",
            "seconds": 0.1,
            "message": "",
        }
        entry["rerun"] = {
            "verdicts": {"reference": [settled["verdict"]]},
            "agreed_on": 1,
            "settled": {"reference": settled},
        }
    reference.write_text(json.dumps(doc))
    done = conformance("--corpus", corpus, "--ip-version", "4", "--against", reference)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "false passes: 0" in done.stdout
