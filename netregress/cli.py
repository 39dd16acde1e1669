# SPDX-License-Identifier: GPL-2.0-only
"""``scripts/netregress``: the regression cases on the running kernel, through pytest.

Why a module and not a shell loop over the arguments: whether the user named test paths is for
pytest's parser to say, not for the disk. A loop that takes any existing file for a path would
run the whole test tree for ``--junitxml out.xml`` as soon as out.xml exists. Here
``-o testpaths=tests/cases`` hands the default to pytest, which uses it only when its own
parser finds no file-or-dir argument (and only from the checkout's root, which is where it
starts pytest).
"""

import argparse
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from netregress.errors import NetregressError, run_cli

REPO = Path(__file__).resolve().parents[1]
CASES = "tests/cases"
WORKERS = "2"
REPORT = "artifacts/report.html"  # pytest-html's page, as scripts/test writes it


def parser() -> argparse.ArgumentParser:
    """Our own options, for the help only: every other word is pytest's, unchanged."""
    cli = argparse.ArgumentParser(
        prog="scripts/netregress",
        usage="%(prog)s [-h] [--version] [PYTEST_OPTION ...] [FILE_OR_DIR ...]",
        description=f"Install what is missing (scripts/setup), then run the regression cases "
        f"({CASES}, or the files and node ids given) on the running kernel with pytest -n "
        f"{WORKERS}, and print each case's verdict, skips with their reason. As a normal user "
        "it runs rootless: inside a user + network + mount namespace of its own, where every "
        "case that needs only namespaces it owns runs and the rest skip with the reason "
        "(docs/rootless.md).",
        epilog="Any pytest option or argument works too (pytest's own help follows): "
        "-k EXPR, -v, -n 0, --junitxml FILE, --kernel NAME (one VM: with -n 0) …",
        add_help=False,
        allow_abbrev=False,
    )
    cli.add_argument("-h", "--help", action="store_true", help="this help, then pytest's")
    cli.add_argument("--version", action="store_true", help="netregress's version (pytest's: -V)")
    return cli


def command(words: list[str]) -> list[str]:
    """The pytest command line for the user's words; through netns.rootless unless root.

    ``-rfE``, not ``-rfEs``: the netregress summary (netns/pytest_plugin.py) already lists
    every skip with its reason, so pytest's own list would show each one twice. A run leaves
    a page to open, :data:`REPORT` (its last line says where), unless the user named another
    with ``--html`` or only collects (a ``--co`` would replace the last run's page with an
    empty one). pytest's parser takes no abbreviation of a long option, so these words are
    its only spellings."""
    pytest = [sys.executable, "-m", "pytest", "-n", WORKERS, "-rfE", "-o", f"testpaths={CASES}"]
    if not any(
        word in ("--co", "--collect-only") or word.partition("=")[0] == "--html"
        for word in _options(words)
    ):
        pytest += ["--html", REPORT, "--self-contained-html"]
    if os.geteuid() == 0:
        return [*pytest, *words]
    return [sys.executable, "-m", "netns.rootless", "--", *pytest, *words]


def _options(words: list[str]) -> list[str]:
    """The words before the first ``--``: after it, pytest takes every word for a path."""
    return words[: words.index("--")] if "--" in words else words


def _help() -> int:
    """Ours, then pytest's own (from the checkout's root, so our plugins' options show).

    One write, once both are known, so that `--help | head` ends quietly: the whole text fits
    in the pipe's buffer, whereas a second write after pytest's start-up can meet a pipe that
    head has already closed."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], cwd=REPO, capture_output=True, text=True
    )
    # Its first paragraph is its usage line, `python -m pytest …`: ours is above.
    pytests = done.stdout.partition("\n\n")[2]
    sys.stdout.write(f"{parser().format_help()}\npytest's options:\n\n{pytests}")
    sys.stderr.write(done.stderr)
    return done.returncode


def _version() -> int:
    try:
        print(f"netregress {importlib.metadata.version('netregress')}")
    except importlib.metadata.PackageNotFoundError:
        raise NetregressError(
            "netregress is not installed in this Python: run scripts/setup"
        ) from None
    return 0


def _run(words: list[str]) -> int:
    """pytest replaces this process (its exit status and Ctrl-C are the user's), from the
    checkout's root: the rootdir that testpaths and the cases' paths are relative to."""
    os.chdir(REPO)
    argv = command(words)
    os.execv(argv[0], argv)


def main(argv: list[str] | None = None) -> int:
    """Our options count before the first ``--`` only (:func:`_options`); after it every word
    is pytest's."""
    words = sys.argv[1:] if argv is None else argv
    ours = set(_options(words))
    if ours & {"-h", "--help"}:
        return run_cli("netregress", _help)
    if "--version" in ours:
        return run_cli("netregress", _version)
    return run_cli("netregress", lambda: _run(words))


if __name__ == "__main__":
    sys.exit(main())
