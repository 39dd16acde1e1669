# SPDX-License-Identifier: GPL-2.0-only
"""The kernel build pipeline's own parts, on real files, real `patch`, `make`, `tar` and apt.

The kernel build itself (tens of minutes) is proven by scripts/build-kernel and the
re-introduced-bug check, not here; these tests cover every decision around it.
"""

import json
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from kernels.acquire.from_source import builder, config, make
from kernels.acquire.from_source.builder import BuildRequest
from kernels.acquire.from_source.patches import Patch, sync_patches
from kernels.acquire.from_source.source import (
    USR_SRC,
    SourceTree,
    debian_tarball,
    extract_tarball,
    git_tree,
    https_url,
    is_kernel_tree,
)
from kernels.acquire.kernel import BUILD_RECORD, GitSource, recorded_git
from kernels.bisect.c01 import PACKAGE, PATCH
from kernels.errors import KernelsError
from netns.variants import broken
from netregress import process
from tests.unit.test_process import alive, wait_dead


def fake_tree(root: Path) -> Path:
    """The files is_kernel_tree() looks at: enough for the checks, not a kernel."""
    (root / "arch/x86/configs").mkdir(parents=True)
    (root / "kernel/configs").mkdir(parents=True)
    (root / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\n")
    (root / "Kconfig").write_text("")
    return root


def test_kernel_tree_detection(tmp_path: Path) -> None:
    assert not is_kernel_tree(tmp_path)
    assert is_kernel_tree(fake_tree(tmp_path / "linux"))


def test_git_tree_refuses_non_kernel_and_built_in_place(tmp_path: Path) -> None:
    with pytest.raises(KernelsError, match="no such directory"):
        git_tree(tmp_path / "missing")
    with pytest.raises(KernelsError, match="is not a kernel source tree"):
        git_tree(tmp_path)
    tree = fake_tree(tmp_path / "linux")
    assert git_tree(tree).id.startswith("tree-linux-")
    (tree / ".config").write_text("")
    with pytest.raises(KernelsError, match="mrproper"):
        git_tree(tree)


def _git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def test_a_git_tree_names_its_checkout_and_its_uncommitted_changes(tmp_path: Path) -> None:
    """What KCIDB's checkout gets (docs/kcidb.md): the commit, the branch's remote as https,
    and a patchset hash exactly when tracked files differ from the commit."""
    tree = fake_tree(tmp_path / "linux")
    assert git_tree(tree).git is None  # no git checkout: no git fields
    _git(tree, "init", "-q", "-b", "net-next")
    _git(tree, "add", ".")
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "base")
    _git(tree, "remote", "add", "origin", "git@gitlab.example.org:netdev/net-next.git")
    clean = git_tree(tree).git
    assert clean == GitSource(
        _git(tree, "rev-parse", "HEAD"), "https://gitlab.example.org/netdev/net-next.git",
        "net-next", "",
    )  # fmt: skip
    (tree / "untracked.c").write_text("int x;\n")
    assert git_tree(tree).git == clean  # untracked files are no part of the build's patch
    (tree / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 2\n")
    edited = git_tree(tree).git
    assert edited is not None and len(edited.patchset_hash) == 64
    assert edited == GitSource(clean.commit, clean.repository_url, "net-next", edited.patchset_hash)
    inner = fake_tree(tree / "vendor/linux")  # inside another repository: not its commit
    assert git_tree(inner).git is None


@pytest.mark.parametrize(
    ("remote", "url"),
    [
        ("https://git.kernel.org/pub/scm/linux/kernel/git/netdev/net.git",
         "https://git.kernel.org/pub/scm/linux/kernel/git/netdev/net.git"),
        ("git://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git",
         "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"),
        ("ssh://git@gitlab.example.org:2222/me/linux.git", "https://gitlab.example.org/me/linux.git"),
        ("git@github.com:me/linux.git", "https://github.com/me/linux.git"),
        ("https://me:secret-token@git.example.org/linux.git", "https://git.example.org/linux.git"),
        ("/src/linux", ""),
        ("../linux", ""),
        ("file:///src/linux", ""),
    ],
)  # fmt: skip
def test_remotes_become_https_addresses_without_credentials(remote: str, url: str) -> None:
    assert https_url(remote) == url


def test_a_built_image_keeps_its_checkout_for_a_path_kernel(tmp_path: Path) -> None:
    """A `path` kernel pointing at one of scripts/build-kernel's results names the same
    checkout as the `source` kernel it was built as; any other image names none."""
    git = GitSource("c" * 40, "https://git.example.org/linux.git", "main", "")
    (tmp_path / BUILD_RECORD).write_text(json.dumps({"release": "6.1.0", "git": asdict(git)}))
    assert recorded_git(tmp_path / "bzImage") == git
    (tmp_path / BUILD_RECORD).write_text(json.dumps({"release": "6.1.0", "git": None}))
    assert recorded_git(tmp_path / "bzImage") is None
    assert recorded_git(tmp_path / "elsewhere/bzImage") is None


def test_debian_package_errors() -> None:
    with pytest.raises(KernelsError, match="not a Debian kernel source package name"):
        debian_tarball("linux-image-6.1")
    with pytest.raises(KernelsError, match="no such source package: linux-source-0.1"):
        debian_tarball("linux-source-0.1")


def test_extract_tarball_replaces_dest(tmp_path: Path) -> None:
    src = tmp_path / "linux-source-9.9"
    src.mkdir()
    (src / "Makefile").write_text("VERSION = 9\n")
    tarball = tmp_path / "linux-source-9.9.tar.xz"
    with tarfile.open(tarball, "w:xz") as archive:
        archive.add(src, arcname=src.name)
    dest = tmp_path / "cache/tree"
    dest.mkdir(parents=True)
    (dest / "stale").write_text("from an interrupted run")
    extract_tarball(tarball, dest)
    assert sorted(p.name for p in dest.iterdir()) == ["Makefile"]
    assert not dest.with_name("tree.partial").exists()


def test_patches_switch_and_revert(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.c").write_text("a\nb\nc\n")
    one = Patch("one.patch", "--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    two = Patch("two.patch", "--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n")
    record = tmp_path / "applied.json"
    said: list[str] = []
    sync_patches(tree, record, [one], said.append)
    assert (tree / "f.c").read_text() == "a\nB\nc\n"
    sync_patches(tree, record, [two], said.append)
    assert (tree / "f.c").read_text() == "A\nb\nc\n"
    sync_patches(tree, record, [], said.append)
    assert (tree / "f.c").read_text() == "a\nb\nc\n"
    assert said == [
        "applying one.patch",
        "reverting one.patch",
        "applying two.patch",
        "reverting two.patch",
    ]


def test_patch_that_does_not_fit_leaves_tree_untouched(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.c").write_text("x\ny\n")
    bad = Patch("bad.patch", "--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n-q\n+Q\n y\n")
    with pytest.raises(KernelsError, match="cannot apply bad.patch"):
        sync_patches(tree, tmp_path / "applied.json", [bad], lambda _: None)
    assert (tree / "f.c").read_text() == "x\ny\n"
    assert not (tmp_path / "applied.json").exists()


def test_patch_read_rejects_non_diff(tmp_path: Path) -> None:
    path = tmp_path / "notes.patch"
    path.write_text("just words\n")
    with pytest.raises(KernelsError, match="not a unified diff"):
        Patch.read(path)


def test_allconfig_order_and_missing_built_ins(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path / "linux")
    (tree / config.BASES[0]).write_text("CONFIG_A=y\n")
    fragment = tmp_path / "ours.config"
    fragment.write_text("CONFIG_B=y\nCONFIG_C=y\n# CONFIG_D is not set\n")
    text = config.allconfig(tree, [fragment])
    assert text.index("CONFIG_A=y") < text.index("CONFIG_B=y")
    final = tmp_path / ".config"
    final.write_text("CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=m\n")
    assert config.missing_built_ins([fragment], final) == ["CONFIG_C"]


def test_netregress_fragment_is_well_formed() -> None:
    """Only `=y` and `is not set` lines: a `=m` would need a module loader the VM init lacks."""
    for line in config.FRAGMENT.read_text().splitlines():
        if not line or (line.startswith("#") and not line.startswith("# CONFIG_")):
            continue
        assert config.BUILT_IN.match(line) or (
            line.startswith("# CONFIG_") and line.endswith(" is not set")
        ), line


def test_make_failure_names_log_and_tail(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "Makefile").write_text(
        "all:\n\t@echo '  CC      foo.o'\n\t@echo 'foo.c:1: error: boom'\n\t@false\n"
    )
    obj = tmp_path / "obj"
    obj.mkdir()
    log = obj / "build.log"
    with pytest.raises(KernelsError) as info:
        make.run_make(tree, obj, ["all"], log, "make", 1)
    message = str(info.value)
    assert "make failed (make exit status 2)" in message
    assert str(log) in message and "foo.c:1: error: boom" in message


def test_elapsed_format() -> None:
    assert make.elapsed(7.9) == "7s"
    assert make.elapsed(65) == "1m05s"


@pytest.mark.skipif(
    not (USR_SRC / f"{PACKAGE}.tar.xz").is_file(), reason=f"{PACKAGE} is not installed"
)
def test_bug_patch_applies_to_debian_6_1(tmp_path: Path) -> None:
    """The C01 patch must keep applying to the installed Debian 6.1 source."""
    member = f"{PACKAGE}/net/ipv4/tcp_output.c"
    subprocess.run(
        ["tar", "-xf", str(debian_tarball(PACKAGE)), "-C", str(tmp_path), member], check=True
    )
    sync_patches(tmp_path / PACKAGE, tmp_path / "applied.json", [Patch.read(PATCH)], lambda _: None)
    patched = (tmp_path / member).read_text()
    assert "if (unlikely((sk->sk_wmem_queued >> 1) > sk->sk_sndbuf)) {" in patched
    assert (
        "tcp_rtx_queue_head(sk)"
        not in patched.split("int tcp_fragment(", 1)[1].split("\n}\n", 1)[0]
    )


def test_result_names_keep_stock_and_patched_apart(tmp_path: Path) -> None:
    source = SourceTree(id="linux-source-6.1", path=tmp_path, owned=True, origin="test")
    assert BuildRequest(source).result_name() == "linux-source-6.1"
    patched = BuildRequest(source, patches=(PATCH,))
    assert patched.result_name() == "linux-source-6.1+tcp-c01-fragment-2019-wqueue-limit"
    assert BuildRequest(source, name="mine").result_name() == "mine"


def test_a_result_built_from_the_same_inputs_is_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutant campaign asks again for kernels it built before (another campaign, a resumed
    one): the same source, patches and fragments give the stored result without a build; any
    other input, or a user's tree (it can change under the same id), does not."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = SourceTree(id="linux-source-6.1", path=tmp_path, owned=True, origin="test")
    one = Patch("one.patch", "--- a/f.c\n+++ b/f.c\n@@ -1 +1 @@\n-a\n+b\n")
    request = BuildRequest(source, patches=(one,), name="m")
    digest = builder._inputs_digest(request, [one])
    dest = tmp_path / "cache/netregress/kernels/built/m"
    (dest / "lib/modules/6.1.0").mkdir(parents=True)
    (dest / "bzImage").write_bytes(b"kernel")
    (dest / "kernel.json").write_text(json.dumps({"release": "6.1.0", "inputs": digest}))
    reused = builder._current_result(request, digest)
    assert reused is not None and (reused.image, reused.release) == (dest / "bzImage", "6.1.0")
    reversed_one = Patch("one.patch", one.text, reverse=True)
    assert builder._inputs_digest(request, [reversed_one]) != digest
    assert builder._inputs_digest(request, []) != digest
    theirs = SourceTree(id="linux-source-6.1", path=tmp_path, owned=False, origin="test")
    assert builder._current_result(BuildRequest(theirs, name="m"), digest) is None


_BUILD = """
import subprocess, sys
from pathlib import Path
from kernels.acquire.from_source import make
if sys.argv[3] == "raw":
    make.Process = subprocess.Popen
tree, obj = Path(sys.argv[1]), Path(sys.argv[2])
make.run_make(tree, obj, ["all"], obj / "build.log", "make", 1)
"""


@pytest.mark.parametrize(
    "start", ["core", broken("raw", id="raw-popen", why="a raw Popen's make outlives the build")]
)
def test_make_dies_with_a_killed_build(tmp_path: Path, start: str) -> None:
    """make runs through the process core: a SIGKILLed build leaves no make running. (Its
    recipe's commands are make's children, not ours: each ends on its own.)"""
    tree, obj = tmp_path / "tree", tmp_path / "obj"
    tree.mkdir()
    obj.mkdir()
    pids = {name: tmp_path / f"{name}.pid" for name in ("make", "job")}
    (tree / "Makefile").write_text(
        f"all:\n\t@echo $$PPID > {pids['make']}; echo $$$$ > {pids['job']}; exec sleep 60\n"
    )
    build = subprocess.Popen([sys.executable, "-c", _BUILD, str(tree), str(obj), start])
    try:
        deadline = time.monotonic() + 30
        while written_pid(pids["job"]) is None:
            assert time.monotonic() < deadline, "make never ran its recipe"
            time.sleep(0.05)
        make_pid = int(pids["make"].read_text())
        assert alive(make_pid)
        build.kill()
        build.wait()
        assert wait_dead(make_pid)
    finally:
        build.kill()
        build.wait()
        process.kill(pid for path in pids.values() if (pid := written_pid(path)) is not None)


def written_pid(path: Path) -> int | None:
    """The PID a stand-in wrote to *path*, once it has."""
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
