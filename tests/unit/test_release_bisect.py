# SPDX-License-Identifier: GPL-2.0-only
"""scripts/bisect --debian: listing a suite's packaged kernels, Debian version order (dpkg's),
the changelog between two builds, the suspects, the search in both directions, and a build that
cannot boot in the middle of the range being skipped and reported, never taken for bad.

The whole bisect over real packaged kernels boots several TCG guests (minutes each); its run
and figures are in docs/reproducing-a-field-bug.md.
"""

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kernels.acquire import changelog
from kernels.acquire.catalog import DebianKernel, PathKernel, parse_catalog
from kernels.acquire.changelog import Change
from kernels.acquire.debian import unpacked_tree
from kernels.acquire.debian_series import (
    Packaged,
    abi_packages,
    compare_versions,
    find,
    madison,
    ordered,
    series,
)
from kernels.bisect import cli, release_report
from kernels.bisect.releases import Judged, RealJudge, Search, search
from kernels.bisect.suspects import name_words, prefixes, rank
from kernels.errors import KernelsError
from kernels.vm.session import vm_session
from netns.variants import broken

SEARCH = """\
linux-image-6.1.0-47-cloud-amd64-dbg - Debug symbols for linux-image-6.1.0-47-cloud-amd64
linux-image-6.1.0-47-cloud-amd64-unsigned - Linux 6.1 for x86-64 cloud
linux-image-6.1.0-47-cloud-amd64 - Linux 6.1 for x86-64 cloud (signed)
linux-image-6.1.0-48-cloud-amd64-unsigned - Linux 6.1 for x86-64 cloud
linux-image-6.1.0-48-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-6.12.107+deb12-cloud-amd64 - Linux 6.12 for x86-64 cloud (signed)
linux-image-6.12-cloud-amd64 - Linux for x86-64 cloud (meta-package)
linux-image-cloud-amd64 - Linux for x86-64 cloud (meta-package)
"""


def test_the_listing_takes_each_abi_once_signed_first_and_no_metapackage() -> None:
    assert abi_packages(SEARCH, "cloud-amd64") == {
        "6.1.0-47": "linux-image-6.1.0-47-cloud-amd64",
        "6.1.0-48": "linux-image-6.1.0-48-cloud-amd64-unsigned",
        "6.12.107+deb12": "linux-image-6.12.107+deb12-cloud-amd64",
    }


def test_madison_gives_versions_and_pockets_newest_first() -> None:
    text = (
        "linux-image-6.1.0-51-cloud-amd64 |  6.1.177-1 | http://deb.debian.org/debian-security "
        "bookworm-security/main amd64 Packages\n"
        "linux-image-6.1.0-47-cloud-amd64 |  6.1.170-3 | http://deb.debian.org/debian "
        "bookworm/main amd64 Packages\n"
    )
    assert madison(text, "linux-image-6.1.0-51-cloud-amd64") == [("6.1.177-1", "bookworm-security")]


def kernel(abi: str, version: str, pocket: str = "bookworm-security") -> Packaged:
    return Packaged(f"linux-image-{abi}-cloud-amd64", abi, version, pocket)


def test_builds_are_ordered_as_dpkg_orders_debian_versions() -> None:
    """Numeric parts compare as numbers (6.1.99 < 6.1.170), a revision after the upstream
    part, and `~` sorts before anything: a bookworm build of 6.12.107 (-1~deb12u1) comes
    before trixie's own 6.12.107-1."""
    given = [kernel("b", "6.12.107-1"), kernel("a", "6.1.192-2"), kernel("c", "6.1.99-1"),
             kernel("d", "6.1.192-1"), kernel("e", "6.12.107-1~deb12u1")]  # fmt: skip
    assert [k.version for k in ordered(given)] == [
        "6.1.99-1", "6.1.192-1", "6.1.192-2", "6.12.107-1~deb12u1", "6.12.107-1",
    ]  # fmt: skip
    assert compare_versions("6.1.170-3", "6.1.170-3") == 0
    assert compare_versions("1:5.0-1", "6.1.0-1") == 1  # the epoch outranks everything


BOOKWORM = [
    kernel("6.1.0-47", "6.1.170-3", "bookworm"),
    kernel("6.1.0-48", "6.1.172-1"),
    kernel("6.1.0-55", "6.1.192-1"),
    kernel("6.1.0-56", "6.1.192-2"),
    kernel("6.12.107+deb12", "6.12.107-1~deb12u1"),
]


def test_a_build_is_named_by_abi_version_package_or_a_release_only_one_build_carries() -> None:
    six_one = series(BOOKWORM, "6.1")
    assert [k.upstream for k in six_one] == ["6.1.170", "6.1.172", "6.1.192", "6.1.192"]
    assert series(BOOKWORM, "6.12")[0].branch == "6.12"
    assert find(six_one, "6.1.0-47", "good").version == "6.1.170-3"
    assert find(six_one, "6.1.172-1", "good").abi == "6.1.0-48"
    assert find(six_one, "6.1.170", "good").abi == "6.1.0-47"
    with pytest.raises(KernelsError, match="names several builds: 6.1.0-55 .*give the ABI"):
        find(six_one, "6.1.192", "bad")
    with pytest.raises(KernelsError, match=r"--bad 6.1.1: no such packaged kernel; served: "):
        find(six_one, "6.1.1", "bad")


def test_a_build_is_a_pinned_catalog_entry_and_the_catalog_takes_the_pin() -> None:
    assert BOOKWORM[0].spec("bookworm", "cloud-amd64") == DebianKernel(
        "bookworm-6.1.0-47", "bookworm", "cloud-amd64", version="6.1.0-47", default=False
    )
    catalog = parse_catalog(
        '[kernels.k]\nkind = "debian"\nsuite = "bookworm"\nflavour = "cloud-amd64"\n'
        'version = "6.1.0-47"\n'
    )
    assert catalog["k"] == DebianKernel("k", "bookworm", "cloud-amd64", version="6.1.0-47")


def test_the_range_is_the_named_builds_or_the_series_ends() -> None:
    six_one = series(BOOKWORM, "6.1")
    assert cli._ends(six_one, None, None) == (0, 3)
    assert cli._ends(six_one, "6.1.0-48", None) == (1, 3)
    assert cli._ends(six_one, None, "6.1.0-56") == (0, 3)  # the bad one newest: good oldest
    assert cli._ends(six_one, "6.1.0-56", "6.1.0-48") == (1, 3)  # a fix: good is newer
    with pytest.raises(KernelsError, match="the same build"):
        cli._ends(six_one, "6.1.0-47", "6.1.170-3")


CHANGELOG = """\
linux-signed-amd64 (6.1.192+2) bookworm-security; urgency=high

  * Sign kernel from linux 6.1.192-2

  * ext4: fix NULL folio dereference in mballoc (Closes: #1154101)

 -- A Maintainer <someone@debian.org>  Mon, 16 Nov 2026 11:17:40 +0100

linux (6.1.192-1) bookworm-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.191
    - tcp: challenge ACK for non-exact RST in SYN-RECEIVED (CVE-2026-68118)
    - mptcp: fix missing wakeups in edge scenarios
    - [x86] net: ipv4: bound TCP reordering sysctl writes and MTU probe sizes
      (CVE-2026-64422)
    * [armhf] ASoC: sti: use managed regmap_field allocations
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.192
    - rds: tcp: unregister sysctl before tearing down listen socket
    - usb: typec: tcpm: fix debug accessory mode detection for sink ports

  [ Another Maintainer ]
  * Backport changes from 6.12.y:
    - net: tcp: accept old ack during closing

 -- A Maintainer <someone@debian.org>  Mon, 09 Nov 2026 11:17:40 +0100

linux (6.1.190-1) bookworm-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.190
    - tcp: fix corruption of urgent data on multi-segment retransmit

 -- A Maintainer <someone@debian.org>  Mon, 02 Nov 2026 11:17:40 +0100
"""

# The build before: its own changes in the signing package's entry, which the newer build's
# changelog lists as `linux (6.1.190-1)`.
OLDER = """\
linux-signed-amd64 (6.1.190+1) bookworm-security; urgency=high

  * Sign kernel from linux 6.1.190-1

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.190
    - tcp: fix corruption of urgent data on multi-segment retransmit

 -- A Maintainer <someone@debian.org>  Mon, 02 Nov 2026 11:17:40 +0100

linux (6.1.187-1) bookworm-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.187
    - tcp: an older change

 -- A Maintainer <someone@debian.org>  Mon, 26 Oct 2026 11:17:40 +0100
"""


def test_a_changelog_gives_each_commit_its_stable_release_and_debian_its_own() -> None:
    """Titles over two lines are joined, a sub-item bulleted `*` is still a commit of the
    release (indentation decides), and a maintainer's own items belong to no release."""
    entries = changelog.parse(CHANGELOG)
    assert [(e.source, e.version, e.releases) for e in entries] == [
        ("linux-signed-amd64", "6.1.192+2", ()),
        ("linux", "6.1.192-1", ("6.1.191", "6.1.192")),
        ("linux", "6.1.190-1", ("6.1.190",)),
    ]
    assert entries[0].changes[1] == Change(
        "ext4: fix NULL folio dereference in mballoc (Closes: #1154101)", None
    )
    assert entries[1].changes == (
        Change("tcp: challenge ACK for non-exact RST in SYN-RECEIVED (CVE-2026-68118)", "6.1.191"),
        Change("mptcp: fix missing wakeups in edge scenarios", "6.1.191"),
        Change(
            "[x86] net: ipv4: bound TCP reordering sysctl writes and MTU probe sizes "
            "(CVE-2026-64422)",
            "6.1.191",
        ),  # fmt: skip
        Change("[armhf] ASoC: sti: use managed regmap_field allocations", "6.1.191"),
        Change("rds: tcp: unregister sysctl before tearing down listen socket", "6.1.192"),
        Change("usb: typec: tcpm: fix debug accessory mode detection for sink ports", "6.1.192"),
        Change("Backport changes from 6.12.y:", None),
        Change("net: tcp: accept old ack during closing", None),
    )


def test_the_changes_between_two_builds_are_the_entries_the_older_changelog_lacks() -> None:
    newer, older = changelog.parse(CHANGELOG), changelog.parse(OLDER)
    assert [e.build for e in older] == [("linux", "6.1.190-1"), ("linux", "6.1.187-1")]
    assert [e.version for e in changelog.newer_than(newer, older)] == ["6.1.192+2", "6.1.192-1"]
    backport = changelog.parse(OLDER.replace("from linux 6.1", "from linux-6.1 6.1"))
    assert backport[0].build == ("linux-6.1", "6.1.190-1")  # bookworm's 6.12 is linux-6.12
    # Without the older changelog: what took a later stable release (Debian's own
    # changes at the same release are then not told apart).
    assert [e.version for e in changelog.since_release(newer, (6, 1, 190))] == ["6.1.192-1"]


def test_the_changelog_is_found_in_the_tree_a_package_was_unpacked_into(tmp_path: Path) -> None:
    """fetch_debian's layout: <version>/kernel.json beside <version>/root, the unpacked tree."""
    docs = tmp_path / "root/usr/share/doc/linux-image-6.1.0-55-cloud-amd64"
    docs.mkdir(parents=True)
    (docs / "changelog.gz").write_bytes(gzip.compress(CHANGELOG.encode()))
    (tmp_path / "root/boot").mkdir()
    image = tmp_path / "root/boot/vmlinuz-6.1.0-55-cloud-amd64"
    assert unpacked_tree(image) is None  # no kernel.json: not one of fetch_debian's trees
    (tmp_path / "kernel.json").write_text("{}")
    tree = unpacked_tree(image)
    assert tree == tmp_path / "root"
    found = changelog.find_changelog(tree)
    assert found == docs / "changelog.gz"
    assert changelog.read(found)[1].releases == ("6.1.191", "6.1.192")
    assert changelog.find_changelog(tmp_path / "elsewhere") is None
    (docs / "changelog.gz").write_bytes(b"not gzip")
    with pytest.raises(KernelsError, match="cannot read the changelog"):
        changelog.read(docs / "changelog.gz")


def test_title_prefixes_skip_arch_tags_and_generic_areas() -> None:
    assert prefixes("[x86] net: ipv4: bound TCP reordering") == ["ipv4"]
    assert prefixes("net/rds: tcp: fix stream corruption") == ["rds", "tcp"]
    assert prefixes('Revert "net/smc: Introduce TCP ULP support"') == []
    assert prefixes("tcp_metrics: use dst_dev_net_rcu()") == ["tcp_metrics"]


def test_suspects_are_the_subsystems_commits_its_own_prefix_first() -> None:
    changes = [c for e in changelog.parse(CHANGELOG)[:2] for c in e.changes]
    suspects = rank(changes, ["tcp"])
    assert [(s.tier, s.change.title[:36], s.why) for s in suspects] == [
        (1, "tcp: challenge ACK for non-exact RST", "tcp marker, prefix tcp:"),
        (1, "net: tcp: accept old ack during clos", "tcp marker, prefix tcp:"),  # Debian's: last
        (2, "[x86] net: ipv4: bound TCP reorderin", "tcp marker, ipv4: names tcp"),
        (2, "rds: tcp: unregister sysctl before t", "tcp marker, prefix rds: tcp:"),
    ]  # fmt: skip
    # Within a rank, the titles sharing words with the failing test's name come first.
    words = name_words(
        ["tests/cases/kernel-packetdrill.corpus::tcp_rfc5961_rst-syn-recv.pkt::ipv4"]
    )
    assert words == {"rfc5961", "rst", "syn", "recv"}
    closer = [Change("tcp: an unrelated fix", "6.1.190"), *changes]
    assert rank(closer, ["tcp"], words)[0].why == "tcp marker, prefix tcp:, names rst, syn"
    assert rank(closer, ["tcp"])[0].change.title == "tcp: an unrelated fix"
    # mptcp, USB's tcpm and the ASoC change are no TCP suspects; no marker, no suspects.
    assert rank(changes, []) == []
    assert [s.change.title[:5] for s in rank(changes, ["bridge"])] == []


def series_of(count: int) -> list[Packaged]:
    return [kernel(f"6.1.0-{40 + i}", f"6.1.{170 + i}-1") for i in range(count)]


def scripted(verdicts: str) -> Callable[[Packaged], Judged]:
    """A synthetic history: `verdicts[i]` is build i's verdict (g, b, s)."""
    words = {"g": "good", "b": "bad", "s": "skip"}

    def judge(build: Packaged) -> Judged:
        index = int(build.abi.rsplit("-", 1)[1]) - 40
        return Judged(build, words[verdicts[index]], "scripted", 1.0, ("tcp",))

    return judge


@pytest.mark.parametrize(
    ("verdicts", "before", "after", "between"),
    [
        ("ggggbbbbb", 3, 4, []),  # a regression: last good, first bad
        ("bbgggggg", 1, 2, []),  # a fix: last bad, first good
        ("gsgsbb", 2, 4, [3]),  # only a skipped build left between: both named
        ("gb", 0, 1, []),
    ],
)
def test_the_search_lands_where_the_verdict_changes(
    verdicts: str, before: int, after: int, between: list[int]
) -> None:
    builds = series_of(len(verdicts))
    found = search(builds, 0, len(builds) - 1, scripted(verdicts), print)
    assert (found.before, found.after) == (builds[before], builds[after])
    assert found.between == [builds[i] for i in between]
    assert found.old_verdict == {"g": "good", "b": "bad"}[verdicts[0]]
    assert len(found.steps) <= 2 + len(verdicts).bit_length() + verdicts.count("s")


@pytest.mark.parametrize(
    ("verdicts", "message"),
    [
        ("gggg", "both ends are good"),
        ("sggb", r"6.1.0-40 \(6.1.170-1\) bounds the range but cannot be judged \(scripted\)"),
        ("gggs", "6.1.0-43 .* bounds the range but cannot be judged"),
    ],
)
def test_a_range_whose_ends_do_not_differ_is_refused(verdicts: str, message: str) -> None:
    builds = series_of(len(verdicts))
    with pytest.raises(KernelsError, match=message):
        search(builds, 0, len(builds) - 1, scripted(verdicts), print)


@pytest.mark.parametrize(
    "skip_is_bad",
    [
        False,
        broken(
            True,
            id="skip-taken-for-bad",
            why="the broken build, counted bad, moves the first good build past the real one",
        ),
    ],  # fmt: skip
)
def test_a_build_that_cannot_boot_mid_range_is_skipped_and_reported(
    tmp_path: Path, skip_is_bad: bool
) -> None:
    """A fake listing injected at the listing seam: build 3 of 7 (the first one the search
    picks) is a corrupt bzImage, judged by the real judge: fetched and refused at the boot
    check, so skipped with the reason, never a verdict. The other builds are a synthetic fix
    at build 2. Counting the corrupt build as bad (the broken variant) lands on build 4."""
    builds = series_of(7)
    corrupt = tmp_path / "bzImage"
    corrupt.write_bytes(b"\x7fELF" + bytes(4096))
    history = scripted("bbggggg")
    with vm_session() as vm:
        real = RealJudge(lambda k: PathKernel(name=k.abi, image=corrupt), ["t.py"], "tcg",
                         False, tmp_path / "out", vm, print)  # fmt: skip

        def judge(build: Packaged) -> Judged:
            if build != builds[3]:
                return history(build)
            judged = real(build)
            if skip_is_bad and judged.verdict == "skip":
                return Judged(build, "bad", judged.why, judged.seconds)
            return judged

        found = search(builds, 0, 6, judge, print)
    assert (found.before, found.after) == (builds[1], builds[2])
    skipped = [step for step in found.steps if step.kernel == builds[3]]
    assert skipped[0].verdict == "skip"
    assert "not bootable" in skipped[0].why and "is not an x86 bzImage" in skipped[0].why
    report = release_report.Report("bookworm", "cloud-amd64", "6.1", ["t.py"], found, 9.0)
    assert f"skipped 6.1.0-43 (6.1.173-1): {skipped[0].why}" in release_report.summary(report)


def test_the_report_names_the_builds_the_releases_between_and_the_suspects(
    tmp_path: Path,
) -> None:
    builds = [kernel("6.1.0-54", "6.1.190-1"), kernel("6.1.0-55", "6.1.192-1")]
    found = Search(builds, [Judged(builds[0], "bad", "failed: x", 60.0, ("tcp",)),
                            Judged(builds[1], "good", "passed: x", 50.0)],  # fmt: skip
                   builds[0], builds[1])  # fmt: skip
    report = release_report.Report("bookworm", "cloud-amd64", "6.1", ["x"], found, 110.0)
    newer, older = tmp_path / "new.gz", tmp_path / "old.gz"
    newer.write_bytes(gzip.compress(CHANGELOG.encode()))
    older.write_bytes(gzip.compress(OLDER.encode()))
    release_report.add_changes(report, newer, older)
    assert report.releases == ["6.1.191", "6.1.192"]
    lines = release_report.summary(report)
    assert lines[:2] == [
        "last bad:  linux-image-6.1.0-54-cloud-amd64 6.1.190-1 (upstream 6.1.190)",
        "first good: linux-image-6.1.0-55-cloud-amd64 6.1.192-1 (upstream 6.1.192)",
    ]
    assert "upstream stable releases in between: 6.1.191, 6.1.192" in lines
    assert any("tcp: challenge ACK for non-exact RST in SYN-RECEIVED" in line for line in lines)
    data = json.loads(json.dumps(release_report.to_json(report)))
    assert data["direction"] == "fix"
    assert data["first_good"]["abi"] == "6.1.0-55"
    assert data["changes"] == 10 and data["suspects"][0]["release"] == "6.1.191"
    text = release_report.to_markdown(report)
    assert 'version = "6.1.0-55"' in text and "| 6.1.190 | bookworm-security | bad |" in text
    pinned = parse_catalog(text.split("```toml\n", 1)[1].split("```", 1)[0])
    assert [spec.name for spec in pinned.values()] == ["bookworm-6.1.0-54", "bookworm-6.1.0-55"]
    release_report.add_changes(report, None, None)
    assert "ships no changelog" in report.changelog
    assert release_report.stable_range(builds[1], kernel("x", "6.1.192-2")) == []
    report.releases = release_report.stable_range(builds[0], kernel("6.1.0-56", "6.1.200-1"))
    assert "upstream stable releases in between: 6.1.191 … 6.1.200 (10 releases)" in (
        release_report.summary(report)
    )
