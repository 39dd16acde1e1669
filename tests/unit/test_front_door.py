# SPDX-License-Identifier: GPL-2.0-only
"""What a first run of ``scripts/netregress`` shows: a bad selection is one clear usage error
before any worker starts, and the end of a run says what failed, why, and where to look.

The selections run the real command (``python -m netregress.cli``, two workers as users get
them) on one small script: before the check, xdist's workers each broke on the expression and
the run died of an INTERNALERROR naming a test (``assert not '…c01….pkt::ipv4'``, exit 3), and
``-m tpc`` selected nothing without a word (exit 5).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from netns import rootless
from netns.pytest_plugin import SUBSYSTEMS
from netns.selection import unknown_markers
from netregress.cli import REPORT, command

REPO = Path(__file__).resolve().parents[2]
C01 = "tests/cases/packetdrill/c01-tcp-wqueue-too-big-v4.pkt"
NO_NAMESPACES = None if os.geteuid() == 0 else rootless.userns_problem()
needs_a_run = pytest.mark.skipif(
    NO_NAMESPACES is not None, reason=f"cannot run rootless: {NO_NAMESPACES}"
)


def netregress(*words: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "netregress.cli", "-p", "no:cacheprovider", *words]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


@needs_a_run
@pytest.mark.parametrize(
    "words, said",
    [
        (
            ["-m", "tcp and ("],
            "ERROR: Wrong expression passed to '-m': tcp and (: at column 10: expected not OR "
            "left parenthesis OR identifier; got end of input",
        ),
        (["-k", "c01 and"], "ERROR: Wrong expression passed to '-k': c01 and: at column 8:"),
        (
            ["-m", "tpc or vxlan"],
            "ERROR: Unknown marker in '-m' expression: tpc (did you mean tcp?). Subsystem "
            f"markers: {', '.join(SUBSYSTEMS)}; the other registered markers: ",
        ),
    ],
    ids=["open-parenthesis", "dangling-and", "misspelt-subsystem"],
)
def test_a_bad_selection_is_a_usage_error_before_any_worker(words: list[str], said: str) -> None:
    done = netregress(*words, C01)  # -n 2: scripts/netregress's default
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [said + done.stderr.strip().partition(said)[2]]
    assert done.stderr.startswith(said), done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert "workers" not in done.stdout  # none was started


def test_an_unknown_marker_names_the_nearest_known_one() -> None:
    registered = [*SUBSYSTEMS, "packetdrill", "skip"]
    assert unknown_markers(Expression.compile("tcp and not vxlan"), registered, SUBSYSTEMS) is None
    said = unknown_markers(Expression.compile("(tpc or brige) and zzz"), registered, SUBSYSTEMS)
    assert said is not None and said.startswith(
        "Unknown marker in '-m' expression: brige (did you mean bridge?), tpc (did you mean "
        "tcp?), zzz. Subsystem markers: tcp, udp,"
    )
    assert said.endswith("the other registered markers: packetdrill, skip (pytest --markers "
                         "describes each)")  # fmt: skip


def test_a_misspelt_marker_on_a_test_is_an_error(tmp_path: Path, opted_in: None) -> None:
    """This project's pytest configuration (strict_markers): a marker nobody registered is a
    collection error, not a warning."""
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n\n@pytest.mark.tpc\ndef test_x():\n    pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"),
         f"--rootdir={tmp_path}", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "'tpc' not found in `markers` configuration option" in done.stdout


def test_netregress_leaves_a_page_unless_told_otherwise() -> None:
    def leaves_ours(*words: str) -> bool:
        argv = command(list(words))
        return argv[argv.index(REPORT) - 1 : argv.index(REPORT) + 2] == [
            "--html", REPORT, "--self-contained-html"
        ] if REPORT in argv else False  # fmt: skip

    assert leaves_ours("-k", "cork")
    assert not leaves_ours("--html=mine.html", "-k", "cork")
    assert not leaves_ours("--html", "mine.html")
    assert not leaves_ours("--co")  # collecting only: the last run's page stays
    assert leaves_ours("--", "--html")  # after `--`, a path


SESSION = """
import pytest
from netns import artifacts
from netns.variants import broken


@pytest.mark.parametrize("x", [0, broken(1, id="one", why="x is 1")])
def test_oracle(x):
    assert x == 0


def test_fails():
    artifacts.new_path("kept", ".txt").write_text("evidence")
    assert 1 == 2, "the first line says why\\nand a second line does not"


@pytest.mark.parametrize("i", range(3))
def test_lacks(i):
    pytest.skip("kernel lacks frobnication")


def test_other_reason():
    pytest.skip("needs root")


@pytest.mark.xfail(reason="a known kernel difference", strict=True)
def test_known():
    assert False
"""


def test_the_summary_says_why_groups_skips_and_counts_the_proofs(
    pytester: pytest.Pytester,
) -> None:
    """Two workers: the mark that a broken variant failed as it must travels with its report."""
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "--html=r.html")
    result.assert_outcomes(passed=1, failed=1, skipped=4, xfailed=2)
    out = result.stdout.str()
    summary = out[out.index("netregress summary") :].splitlines()[1:]
    nodeids = [line.split()[1] for line in summary if line.startswith(("PASSED", "XFAILED"))]
    assert nodeids == ["test_session.py::test_oracle[0]", "test_session.py::test_known"]
    assert [" ".join(line.split()) for line in summary[2:8]] == [
        "SKIPPED 3 x kernel lacks frobnication",
        "3 in test_session.py",
        "SKIPPED 1 x needs root",
        "1 in test_session.py",
        "1 broken variant failed as it must, proving its case's check can fail (counted as "
        "xfailed; not a problem)",
        "FAILED test_session.py::test_fails AssertionError: the first line says why",
    ]
    # The last line: the page, and the folder the failure kept its evidence in.
    assert result.outlines[-1].startswith("netregress: open r.html; pcaps and counters of the "
                                          "failures: artifacts/")  # fmt: skip
    kept = result.outlines[-1].rpartition(" ")[2]
    assert (pytester.path / kept).is_dir() and list((pytester.path / kept).rglob("*kept.txt"))


def test_problems_lists_no_xfails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--summary=problems")
    out = result.stdout.str()
    summary = out[out.index("netregress summary") :].splitlines()[1:]
    assert not [line for line in summary if line.startswith(("XFAILED", "PASSED"))], out
    assert any(line.startswith("FAILED") for line in summary)
    assert any(line.startswith("1 broken variant failed as it must") for line in summary)


def test_a_failing_script_names_itself_relative_to_the_start(pytester: pytest.Pytester) -> None:
    """pytest's short summary keeps the first line of a failure, cut at 80 columns: it starts
    with the script's relative path, not an absolute one that used the line up."""
    script = """\
--ip_version=ipv4
    0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3
   +0 connect(3, ..., ...) = 0
   +0 write(3, ..., 10) = 10
   +0 > (tos 0x10) udp (10)
"""
    pytester.mkdir("sub")
    (pytester.path / "sub" / "wrong.pkt").write_text(script)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED sub/wrong.pkt::ipv4 - sub/wrong.pkt:5: error handling*"])
    result.stdout.fnmatch_lines(["FAILED   sub/wrong.pkt::ipv4 sub/wrong.pkt:5: error handling *"])
