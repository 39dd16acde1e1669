# SPDX-License-Identifier: GPL-2.0-only
"""scripts/mutants mine: two tiny source trees and a tiny changelog, packed as real .deb files
(dpkg-deb) into the cache the way apt-get download leaves them, mined end to end; the parts
(hunks grouped by function, the changelog's range, titles sorted into subsystems, candidates
that apply to NEW and give back OLD) and the errors a user can cause. A real walk over two
Debian packages is in docs/mutation-testing.md ("Mining real regressions")."""

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from kernels.acquire.from_source.patches import Patch, sync_patches
from kernels.errors import KernelsError
from kernels.mutation import archive
from kernels.mutation.__main__ import main
from kernels.mutation.areas import area_of_file, area_of_title
from kernels.mutation.campaign import Record
from kernels.mutation.candidates import SHAPE, Range, likeliest, render
from kernels.mutation.changelog import range_entries
from kernels.mutation.hunks import check_applies, groups, parse, patch_text, run_diff
from kernels.mutation.mutant import read_mutant
from kernels.mutation.report import markdown

PACKAGE = "linux-source-9.9"
OLD, NEW = "9.9.1-1~deb12u1", "9.9.3-1~deb12u1"

# net/ipv4/tcp_input.c in OLD: two functions; NEW fixes both and moves a label (a goto label
# sits in column 0, as the kernel writes it: the function context must not take it).
OLD_TCP = """\
#include <net/tcp.h>

static int tcp_ack_check(int ack, int snd_una)
{
\tint ok = 0;

\tif (ack > snd_una)
\t\tok = 1;
\tif (!ok)
\t\tgoto out;
\tok++;
\tok++;
\tok++;
out:
\tok++;
\tok++;
\treturn ok;
}

void tcp_rcv_established(int len)
{
\tint x = len;

\tx += 1;
\tx += 2;
\tx += 3;
\tx += 4;
}
"""
NEW_TCP = (
    OLD_TCP.replace("\tok++;\n\tok++;\n\treturn ok;", "\tok++;\n\tok++;\n\tok--;\n\treturn ok;")
    .replace("if (ack > snd_una)", "if (ack >= snd_una)")
    .replace("\tx += 4;\n", "\tx += 4;\n\tx -= len;\n")
)
# A tunnel file with a form feed (kernel files have them) and no newline at its end.
OLD_GRE = "static int gre_rcv(void)\n{\n\treturn 0;\n}\n\x0c\nint gre_tail = 1;"
NEW_GRE = "static int gre_rcv(void)\n{\n\treturn 1;\n}\n\x0c\nint gre_tail = 1;"

# A header: the changed prototype names its hunk, not the declaration git shows above it.
OLD_H = "int tcp_fragment(int a,\n\t\t int b);\nvoid tcp_send_fin(void);\nint tcp_x;\n"
OLD_H += "void tcp_send_active_reset(int reason);\nint tcp_send_synack(void);\n"
NEW_H = OLD_H.replace("(int reason)", "(int priority, int reason)")

CHANGELOG = f"""\
linux-9.9 ({NEW}) bookworm-security; urgency=high

  * Rebuild for bookworm

 -- Someone <someone@example.org>  Wed, 30 Sep 2026 19:26:53 +0200

linux (9.9.3-1) trixie-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v9.x/ChangeLog-9.9.2
    - tcp: fix tcp_ack_check() off by one when ack equals snd_una
      (CVE-2099-0001)
    - net: dsa: foo: fix a switch
    - [amd64] x86/cpu: something else
    https://www.kernel.org/pub/linux/kernel/v9.x/ChangeLog-9.9.3
    - net/tcp: tcp_rcv_established: undo len
    - ip_gre: return one from gre_rcv
    - net: bridge: mcast: fix a leak

  [ Debian Maintainer ]
  * net: fix something in dev.c (Closes: #1)

 -- Someone <someone@example.org>  Wed, 30 Sep 2026 19:26:53 +0200

linux-9.9 ({OLD}) bookworm-security; urgency=high

  * Rebuild for bookworm

 -- Someone <someone@example.org>  Wed, 30 Sep 2026 19:26:53 +0200

linux (9.9.1-1) trixie-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v9.x/ChangeLog-9.9.1
    - tcp: a fix OLD already has

 -- Someone <someone@example.org>  Wed, 30 Sep 2026 19:26:53 +0200
"""


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    shared = {"Makefile": "VERSION = 9\n", "net/ipv4/route.c": "int route;\n"}
    old = _tree(tmp_path / "old", {**shared, "net/ipv4/tcp_input.c": OLD_TCP,
                                   "include/net/tcp.h": OLD_H,
                                   "net/ipv4/ip_gre.c": OLD_GRE,
                                   "net/core/gone_later.c": "int gone;\n"})  # fmt: skip
    new = _tree(tmp_path / "new", {**shared, "net/ipv4/tcp_input.c": NEW_TCP,
                                   "include/net/tcp.h": NEW_H,
                                   "net/ipv4/ip_gre.c": NEW_GRE,
                                   "net/bridge/br_new.c": "int br_new;\n"})  # fmt: skip
    return new, old


def _deb(tree: Path, version: str, changelog: str, into: Path) -> None:
    """A linux-source .deb as Debian lays it out: the changelog under usr/share/doc and the
    tree as usr/src/PACKAGE.tar.xz with one top directory."""
    root = into.parent / f"root-{version}"
    doc = root / f"usr/share/doc/{PACKAGE}"
    doc.mkdir(parents=True)
    (doc / "changelog.Debian.gz").write_bytes(gzip.compress(changelog.encode()))
    (root / "usr/src").mkdir(parents=True)
    staged = into.parent / f"stage-{version}"
    shutil.copytree(tree, staged / PACKAGE)
    subprocess.run(["tar", "-cJf", str(root / f"usr/src/{PACKAGE}.tar.xz"), "-C", str(staged),
                    PACKAGE], check=True)  # fmt: skip
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN/control").write_text(
        f"Package: {PACKAGE}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: Someone <someone@example.org>\nDescription: test\n"
    )
    into.mkdir(parents=True, exist_ok=True)
    deb = into / f"{PACKAGE}_{version}_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(root), str(deb)],
                   check=True, capture_output=True)  # fmt: skip


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Both versions' .deb in a fresh cache, where a download would have put them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    new, old = _trees(tmp_path / "src")
    debs = tmp_path / "cache/netregress/kernels/mined" / PACKAGE / "debs"
    _deb(old, OLD, CHANGELOG[CHANGELOG.index(f"linux-9.9 ({OLD})") :], debs)
    _deb(new, NEW, CHANGELOG, debs)
    return tmp_path


def test_files_and_titles_sort_into_the_same_subsystems() -> None:
    assert [area_of_file(p) for p in ("net/ipv4/tcp_input.c", "net/ipv6/tcp_ipv6.c",
            "net/ipv4/ip_gre.c", "drivers/net/vxlan/vxlan_core.c", "net/ipv4/route.c",
            "net/core/dev.c", "net/sched/sch_netem.c", "net/sched/sch_fq.c")] == [
        "tcp", "tcp", "tunnel", "vxlan", "ipv4", "core", "netem", "other"]  # fmt: skip
    titles = {
        "tcp: fix x": "tcp",
        "net/tcp-ao: fix y": "tcp",
        "net: bridge: mcast: fix z": "bridge",  # mcast unknown, bridge known
        "net: dsa: b53: fix": "other",  # dsa right below the umbrella: not core's
        "net: fix spurious TX timeout": "core",
        "ipv6: seg6: clear IPv4 control block": "ipv6",
        "net_sched: sch_netem: fix": "netem",
        "net/sched: cls_api: fix": "other",
        '[amd64] Revert "vxlan: keep the last remote"': "vxlan",
        "ip6_gre: fix": "tunnel",
        "smc: Use __sk_dst_get()": "other",
        "usb: core: Add lock": "other",  # core below another subsystem's name
        "drm/bridge: dw-hdmi: fix": "other",
        "net/rds: tcp: don't force": "other",
        "netfilter: br_netfilter: fix": "bridge",
        "netfilter: nf_tables: fix": "other",
        "ipv4: fib: bound table IDs": "ipv4",
    }
    assert {title: area_of_title(title) for title in titles} == titles


def test_the_range_is_what_the_uploads_after_old_brought() -> None:
    """From NEW's changelog: the uploads newer than OLD, wrapped titles joined. 9.9.1-1 (the
    trixie upload OLD is a rebuild of) is OLD's own and stays out."""
    entries = range_entries(CHANGELOG, OLD, NEW)
    assert [(e.title, e.release, e.subsystem) for e in entries] == [
        ("Rebuild for bookworm", NEW, "other"),
        ("tcp: fix tcp_ack_check() off by one when ack equals snd_una (CVE-2099-0001)",
         "9.9.2", "tcp"),
        ("net: dsa: foo: fix a switch", "9.9.2", "other"),
        ("[amd64] x86/cpu: something else", "9.9.2", "other"),
        ("net/tcp: tcp_rcv_established: undo len", "9.9.3", "tcp"),
        ("ip_gre: return one from gre_rcv", "9.9.3", "tunnel"),
        ("net: bridge: mcast: fix a leak", "9.9.3", "bridge"),
        ("net: fix something in dev.c (Closes: #1)", "9.9.3-1", "core"),
    ]  # fmt: skip
    assert "tcp: a fix OLD already has" in [e.title for e in range_entries(CHANGELOG, "9.9.0", NEW)]
    with pytest.raises(KernelsError, match="has no upload 9.9.9"):
        range_entries(CHANGELOG, OLD, "9.9.9")


def test_hunks_are_grouped_by_their_function_and_each_group_puts_old_back(
    tmp_path: Path,
) -> None:
    new, old = _trees(tmp_path)
    found = groups(parse(run_diff(new, old)))
    assert [(g.path, g.function, g.subsystem, len(g.hunks)) for g in found] == [
        ("include/net/tcp.h", "tcp_send_active_reset()", "tcp", 1),  # not tcp_fragment()
        ("net/bridge/br_new.c", "(whole file)", "bridge", 1),  # only in NEW: the revert removes it
        ("net/core/gone_later.c", "(whole file)", "core", 1),  # only in OLD: it comes back
        ("net/ipv4/ip_gre.c", "gre_rcv()", "tunnel", 1),
        ("net/ipv4/tcp_input.c", "tcp_ack_check()", "tcp", 2),  # not "out:"
        ("net/ipv4/tcp_input.c", "tcp_rcv_established()", "tcp", 1),
    ]
    # Every group alone applies to NEW exactly; all of them, one after the other, make OLD.
    work = tmp_path / "work"
    shutil.copytree(new, work)
    for group in found:
        check_applies(patch_text(group.file), new, group.function)
        argv = ["patch", "-p1", "--batch", "--no-backup-if-mismatch", "-s", "-d", str(work)]
        subprocess.run(argv, input=patch_text(group.file), text=True, check=True)
    assert subprocess.run(["diff", "-r", str(work), str(old)]).returncode == 0
    # Broken variant: a group that is not the one NEW holds (OLD's side) is refused.
    with pytest.raises(KernelsError, match="does not apply"):
        check_applies(patch_text(found[4].file), old, "tcp_ack_check()")


def test_one_group_alone_leaves_the_rest_of_new(tmp_path: Path) -> None:
    """Its result-side line numbers are counted for itself: the whole diff says the second
    function's hunk lands one line up (the first function lost a line), alone it does not."""
    new, old = _trees(tmp_path)
    diff = run_diff(new, old)
    assert "@@ -26,5 +25,4 @@ void tcp_rcv_established" in diff
    last = groups(parse(diff))[-1]
    assert "@@ -26,5 +26,4 @@ void tcp_rcv_established" in patch_text(last.file)
    subprocess.run(["patch", "-p1", "--batch", "--fuzz=0", "-s", "-d", str(new)],
                   input=patch_text(last.file), text=True, check=True)  # fmt: skip
    text = (new / "net/ipv4/tcp_input.c").read_text()
    assert "x -= len" not in text and "ack >= snd_una" in text


def test_candidates_propose_the_likeliest_titles_and_must_be_confirmed(tmp_path: Path) -> None:
    new, old = _trees(tmp_path)
    found = groups(parse(run_diff(new, old)))
    entries = range_entries(CHANGELOG, OLD, NEW)
    ack, rcv = found[4], found[5]
    assert [e.title for e in likeliest(rcv, entries)][0].startswith("net/tcp: tcp_rcv_est")
    assert [e.title for e in likeliest(ack, entries)][0].startswith("tcp: fix tcp_ack_check()")
    path = tmp_path / "tcp-01-tcp_ack_check.patch"
    path.write_text(render(ack, Range(PACKAGE, OLD, NEW), entries))
    with pytest.raises(KernelsError, match="not yet confirmed"):
        read_mutant(path)
    text = path.read_text()
    title = "tcp: fix tcp_ack_check() off by one when ack equals snd_una (CVE-2099-0001)"
    assert f"#   {title} (9.9.2)" in text and f"Range: {OLD}..{NEW}" in text
    confirmed = text.replace("Upstream:\n", f"Upstream: {title}\n", 1)
    path.write_text(confirmed)
    with pytest.raises(KernelsError, match="not yet confirmed"):
        read_mutant(path)  # line 1 still asks its question
    path.write_text("An ACK equal to snd_una is taken as new.\n" + confirmed.split("\n", 1)[1])
    mutant = read_mutant(path)
    assert (mutant.upstream, mutant.range, mutant.subsystem) == (title, f"{OLD}..{NEW}", "tcp")
    # It goes through the build's own patch handling unchanged: NEW's code becomes OLD's.
    sync_patches(new, tmp_path / "applied.json", [mutant.patch], lambda _: None)
    assert "ack > snd_una" in (new / "net/ipv4/tcp_input.c").read_text()
    assert mutant.patch == Patch.read(path)


def test_a_mine_from_two_cached_packages(cached: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = cached / "mined"
    assert main(["mine", PACKAGE, OLD, NEW, "--output", str(out)]) == 0
    printed = capsys.readouterr()
    assert "extracting: 100 %" in printed.err  # progress on the long step
    table = printed.out.split("\n\n")[0].splitlines()
    assert table[0].split() == ["subsystem", "files", "functions", "hunks", "titles"]
    assert table[1].split() == ["tcp", "2", "3", "4", "2"]
    assert table[2].split() == ["tunnel", "1", "1", "1", "1"]
    assert "    9.9.3  net/tcp: tcp_rcv_established: undo len" in printed.out
    names = sorted(path.name for path in out.glob("*.patch"))
    assert names == ["bridge-01-br_new.c.patch", "core-01-gone_later.c.patch",
                     "tcp-01-tcp_send_active_reset.patch", "tcp-02-tcp_ack_check.patch",
                     "tcp-03-tcp_rcv_established.patch",
                     "tunnel-01-gre_rcv.patch"]  # fmt: skip
    # Only the chosen paths were extracted; a second run reuses the cache and keeps edits.
    tree = next((cached / "cache/netregress/kernels/mined" / PACKAGE / NEW).glob("tree-*"))
    assert not (tree / "Makefile").exists() and (tree / "net/ipv4/tcp_input.c").is_file()
    edited = out / "tcp-02-tcp_ack_check.patch"
    edited.write_text("edited by a person\n" + edited.read_text())
    assert main(["mine", PACKAGE, OLD, NEW, "--output", str(out)]) == 0
    again = capsys.readouterr()
    assert "extracting" not in again.err and "(6 already there, kept)" in again.out
    assert edited.read_text().startswith("edited by a person")


def test_other_paths_and_bad_ones(cached: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = cached / "gre"
    assert main(["mine", PACKAGE, OLD, NEW, "--paths", "net/ipv4/ip_gre.c", "--output",
                 str(out)]) == 0  # fmt: skip
    assert [p.name for p in out.glob("*.patch")] == ["tunnel-01-gre_rcv.patch"]
    assert main(["mine", PACKAGE, OLD, NEW, "--paths", "net/nothing"]) == 2
    assert "--paths net/nothing: no such file" in capsys.readouterr().err
    for bad in ("../etc", "/net/ipv4", ""):
        assert main(["mine", PACKAGE, OLD, NEW, "--paths", bad]) == 2
        assert "a path inside the kernel tree" in capsys.readouterr().err


def test_errors_a_user_can_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["mine", "linux-image-6.12", OLD, NEW]) == 2
    assert "not a Debian kernel source package" in capsys.readouterr().err
    assert main(["mine", PACKAGE, NEW, OLD]) == 2
    assert "must be a later version" in capsys.readouterr().err
    monkeypatch.setattr(archive, "served", lambda package: ["9.9.2-1", "9.9.0-1"])
    assert main(["mine", PACKAGE, OLD, NEW]) == 2
    assert f"{PACKAGE} {OLD} is not served by this machine's apt; served: 9.9.2-1, 9.9.0-1" in (
        capsys.readouterr().err
    )
    monkeypatch.setattr(archive, "served", lambda package: [])
    assert main(["mine", PACKAGE, OLD, NEW]) == 2
    assert "apt knows no version of linux-source-9.9" in capsys.readouterr().err


def test_a_broken_download_is_named_and_removed(
    cached: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deb = next((cached / "cache/netregress/kernels/mined" / PACKAGE / "debs").glob(f"*{NEW}*"))
    deb.write_bytes(deb.read_bytes()[: deb.stat().st_size // 2])
    assert main(["mine", PACKAGE, OLD, NEW, "--output", str(cached / "out")]) == 2
    assert "removed it: run again" in capsys.readouterr().err and not deb.exists()


def test_the_report_names_the_upstream_change_a_mined_mutant_reverts() -> None:
    record = Record(name="tcp-01-x", behaviour="An ACK is taken as new.", subsystem="tcp",
                    shape=SHAPE, key="k", outcome="survived", upstream="tcp: fix x",
                    range=f"{OLD}..{NEW}")  # fmt: skip
    assert f"An ACK is taken as new. Upstream: tcp: fix x ({OLD}..{NEW})." in markdown([record], 0)
