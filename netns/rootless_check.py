# SPDX-License-Identifier: GPL-2.0-only
"""CI check of the rootless mode: a normal user's ``scripts/netregress`` gives root's verdicts.

Run as root (``scripts/test`` does): a copy of the checkout, owned by an unprivileged user
(``nobody`` by default), goes through what that user would do, ``scripts/setup`` (its own
virtualenv; Debian packages are already there, so no root) and ``scripts/netregress
SELECTION``; then root runs the same selection from this checkout. Every case that ran
rootless must have root's verdict; every case that skipped rootless is listed with its reason.
The pip wheels come from a local directory root fills first (pip's cache), so the user's
setup does the full install without the network.

    python -m netns.rootless_check [--user nobody] -- tests/cases

It creates nothing but a temporary directory, removed at the end; it changes no sysctl.
"""

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

from .rootless import userns_problem

REPO = Path(__file__).resolve().parents[1]
Verdicts = dict[str, dict[str, str]]


def _as_user(user: pwd.struct_passwd, home: Path, env: dict[str, str]) -> list[str]:
    """Command prefix: run as *user* with a clean environment (the user's own PATH, HOME)."""
    return [
        "setpriv",
        f"--reuid={user.pw_uid}",
        f"--regid={user.pw_gid}",
        "--clear-groups",
        "env",
        "-i",
        f"HOME={home}",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "LANG=C.UTF-8",
        *(f"{key}={value}" for key, value in env.items()),
    ]


def _copy_checkout(target: Path) -> None:
    """The working tree as a user's clone would have it (tracked and new files, no .venv)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _build_requirements() -> list[str]:
    """What pip needs to install the checkout itself (pyproject's build-system.requires)."""
    with open(REPO / "pyproject.toml", "rb") as f:
        requires: list[str] = tomllib.load(f)["build-system"]["requires"]
    return requires


def _download_wheels(wheels: Path) -> None:
    """Every wheel the user's setup installs, from pip's cache or the index, into *wheels*:
    the pinned, hashed lock, then (separately: hash mode refuses unpinned names) the build
    requirements of the checkout's editable install."""
    pip = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check"]
    for requirements in (["-r", str(REPO / "requirements.lock")], _build_requirements()):
        done = subprocess.run([*pip, *requirements, "-d", str(wheels)], check=False)
        if done.returncode != 0:
            raise SystemExit(f"rootless check: pip could not fetch {' '.join(requirements)}")


def _chown_tree(top: Path, user: pwd.struct_passwd) -> None:
    for folder, _, files in os.walk(top):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, user.pw_uid, user.pw_gid)


def _load(path: Path) -> Verdicts:
    if not path.exists():
        raise SystemExit(f"rootless check: the run wrote no verdicts ({path})")
    verdicts: Verdicts = json.loads(path.read_text())
    return verdicts


def compare(root: Verdicts, rootless: Verdicts) -> tuple[list[str], bool]:
    """The report lines, and whether the check holds: some cases ran rootless, all of them
    with root's verdict."""
    ran = sorted(n for n, v in rootless.items() if v["outcome"] != "skipped")
    skipped = sorted(n for n, v in rootless.items() if v["outcome"] == "skipped")
    differ = [n for n in ran if root.get(n, {}).get("outcome") != rootless[n]["outcome"]]
    lines = [
        f"rootless: {len(rootless)} cases, {len(ran)} ran, {len(skipped)} skipped; "
        f"{len(ran) - len(differ)} of {len(ran)} with root's verdict"
    ]
    lines += [
        f"  DIFFERENT {n}: root {root.get(n, {}).get('outcome', 'absent')}, rootless "
        f"{rootless[n]['outcome']}"
        for n in differ
    ]
    outcomes = Counter(rootless[n]["outcome"] for n in ran)
    lines.append("  ran: " + ", ".join(f"{count} {o}" for o, count in sorted(outcomes.items())))
    also_root = [n for n in skipped if root.get(n, {}).get("outcome") == "skipped"]
    lines.append(f"  skipped: {len(skipped)} ({len(also_root)} skip as root too)")
    reasons = Counter(rootless[n]["reason"] for n in skipped)
    for reason, count in reasons.most_common():
        lines.append(f"    {count:3} x {reason}")
    return lines, bool(ran) and not differ


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m netns.rootless_check", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--user", default="nobody", help="the unprivileged user (default nobody)")
    parser.add_argument("selection", nargs="+", help="pytest paths or node ids")
    return parser


def run(user_name: str, selection: list[str]) -> int:
    user = pwd.getpwnam(user_name)
    work = Path(tempfile.mkdtemp(prefix="netregress-rootless-"))
    try:
        os.chmod(work, 0o755)
        checkout, home, wheels = work / "checkout", work / "home", work / "wheels"
        for folder in (checkout, home, wheels):
            folder.mkdir()
        problem = userns_problem(_as_user(user, home, {}))
        if problem is not None:
            print(f"rootless check: not checkable on this machine: {problem}")
            return 0
        _copy_checkout(checkout)
        _download_wheels(wheels)
        _chown_tree(work, user)
        env = {
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheels),
            "NETREGRESS_ARTIFACTS": str(work / "artifacts-rootless"),
        }
        rootless_json, root_json = work / "rootless.json", work / "root.json"
        common = ["-p", "no:cacheprovider", "--summary=none"]
        print(f"== rootless check: scripts/netregress as {user_name}", flush=True)
        subprocess.run(
            [
                *_as_user(user, home, env),
                str(checkout / "scripts" / "netregress"),
                *selection,
                *common,
                f"--record-verdicts={rootless_json}",
            ],
            cwd=checkout,
            check=False,
        )
        print("== rootless check: the same selection as root", flush=True)
        subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "python"),
                "-m",
                "pytest",
                "-n",
                "2",
                "-q",
                *common,
                f"--record-verdicts={root_json}",
                *selection,
            ],
            cwd=REPO,
            check=False,
        )
        lines, holds = compare(_load(root_json), _load(rootless_json))
        print("\n".join(lines))
        return 0 if holds else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if os.geteuid() != 0:
        print(
            f"rootless check: run it as root (it runs the selection as root and as {args.user})",
            file=sys.stderr,
        )
        return 2
    return run(args.user, args.selection)


if __name__ == "__main__":
    sys.exit(main())
