# SPDX-License-Identifier: GPL-2.0-only
"""Privilege is asked per test, and only by this project's runs: a stranger's pytest session
in our virtualenv, as a normal user, meets none of our plugins; our own run as a normal user
runs what needs no namespace and says precisely why the rest cannot run."""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from netns import privilege

REPO = Path(__file__).resolve().parents[2]

STRANGER = """\
import os

def test_runs_unprivileged():
    assert os.geteuid() != 0

def test_meets_none_of_our_plugins(request):
    names = [name for name, _ in request.config.pluginmanager.list_name_plugin()]
    ours = [name for name in names if name and name.split(".")[0] in ("netns", "kernels")]
    assert not ours, ours
"""

OURS = """\
import os
import pytest

def test_parser_like():
    assert os.geteuid() != 0

def test_builds_a_namespace(ns):
    pass

@pytest.mark.needs_root("loads a module")
def test_root_only():
    pass
"""


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the repository that the unprivileged user owns."""
    folder = Path(tempfile.mkdtemp(prefix="stranger-"))
    nobody = pwd.getpwnam("nobody")
    os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    yield folder
    shutil.rmtree(folder)


def _pytest_as_nobody(folder: Path, source: str, *args: str) -> tuple[int, str]:
    (folder / "test_stranger.py").write_text(source)
    nobody = pwd.getpwnam("nobody")
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={nobody.pw_uid}",
            f"--regid={nobody.pw_gid}",
            "--clear-groups",
            sys.executable,
            "-m",
            "pytest",
            "-v",
            "-p",
            "no:cacheprovider",
            "-rs",
            *args,
            "test_stranger.py",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={"HOME": str(folder), "PATH": os.environ["PATH"]},
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to the user nobody (needs root)")
def test_a_strangers_session_in_our_venv_runs_unprivileged_untouched(outside: Path) -> None:
    status, out = _pytest_as_nobody(outside, STRANGER)
    assert status == 0, out
    assert "2 passed" in out
    said = _without_paths(out)
    assert "netregress" not in said and "packetdrill" not in said, said


def _without_paths(out: str) -> str:
    """The session's output less the paths pytest's header prints (the interpreter, the
    virtualenv): they name wherever this checkout lives, and a clone in a folder called
    ``netregress`` is how users make one. What is left is what the plugins said."""
    for path in sorted(
        {
            sys.executable,
            sys.prefix,
            str(Path(sys.prefix).resolve()),
            str(REPO),
            str(REPO.resolve()),
        },
        key=len,
        reverse=True,
    ):
        out = out.replace(path, "<path>")
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to the user nobody (needs root)")
def test_opting_in_loads_the_plugins_and_asks_privilege_per_test(outside: Path) -> None:
    """The broken variant of the stranger check (our plugins loaded, so it must see them),
    and what an unprivileged opt-in run gives: the parser-like test passes, the namespace
    test errors with the fix, the root-only test skips with its reason; no calibration."""
    status, out = _pytest_as_nobody(
        outside,
        STRANGER + OURS.replace("import os\nimport pytest\n", "import pytest\n"),
        "-p",
        "netregress.plugins",
    )
    assert status != 0
    assert "1 failed, 2 passed, 1 skipped, 1 error" in out, out
    assert "test_meets_none_of_our_plugins FAILED" in out
    assert "netregress" in _without_paths(out), "the stranger check could not fail"
    assert (
        "netregress needs root or a user namespace (CAP_NET_ADMIN and CAP_SYS_ADMIN missing)" in out
    )
    assert "needs root in the initial namespace: loads a module" in out
    assert "late-side timing slack calibrated when the first script runs" in out
    assert "Traceback" not in out


def test_root_of_the_initial_namespace_is_told_apart() -> None:
    """This process's own answers agree with what it is (run as root, or rootless)."""
    assert privilege.in_initial_user_namespace() == (
        Path("/proc/self/uid_map").read_text().split() == ["0", "0", "4294967295"]
    )
    if privilege.is_initial_root():
        assert privilege.initial_root_reason("loads a module") is None
        assert privilege.tun_problem() is None
    else:
        assert privilege.initial_root_reason("x") == "needs root in the initial namespace: x"
