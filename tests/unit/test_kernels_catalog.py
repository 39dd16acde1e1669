# SPDX-License-Identifier: GPL-2.0-only
"""The kernel catalog (matrix.toml) and turning entries into bootable kernels, without a VM."""

import re
import struct
from pathlib import Path

import pytest

from kernels.acquire import debian
from kernels.acquire.catalog import (
    DebianKernel,
    PathKernel,
    RunningKernel,
    SourceKernel,
    load_catalog,
    lookup,
    parse_catalog,
    select,
)  # fmt: skip
from kernels.acquire.fetch import fetch
from kernels.acquire.kernel import build_version, bzimage_banner, version_tuple
from kernels.errors import KernelsError


def test_shipped_catalog_has_the_promised_kernels() -> None:
    catalog = load_catalog()
    suites = {spec.suite for spec in catalog.values() if isinstance(spec, DebianKernel)}
    assert {"bullseye", "bookworm", "trixie", "sid"} <= suites
    assert all(
        spec.flavour == "cloud-amd64" for spec in catalog.values() if isinstance(spec, DebianKernel)
    )
    assert any(isinstance(spec, RunningKernel) for spec in catalog.values())
    assert "bookworm-6.1" in catalog


def test_parse_every_kind() -> None:
    catalog = parse_catalog("""
        [kernels.a]
        kind = "debian"
        suite = "bookworm"
        flavour = "cloud-amd64"
        [kernels.b]
        kind = "path"
        image = "/src/bzImage"
        modules = "/src/lib/modules/6.13.0"
        default = false
        [kernels.c]
        kind = "source"
        tree = "/src/linux"
        [kernels.d]
        kind = "running"
    """)
    assert catalog["a"] == DebianKernel("a", "bookworm", "cloud-amd64")
    assert catalog["b"] == PathKernel(
        "b", Path("/src/bzImage"), Path("/src/lib/modules/6.13.0"), default=False
    )
    assert isinstance(catalog["c"], SourceKernel)
    assert [spec.name for spec in select(catalog, None)] == ["a", "c", "d"]
    assert [spec.name for spec in select(catalog, ["d", "a"])] == ["d", "a"]


@pytest.mark.parametrize("text, message", [
    ("[kernels.x]\nkind = 'tarball'", "kind 'tarball'"),
    ("[kernels.x]\nkind = 'debian'\nsuite = 'sid'", "lacks flavour"),
    ("[kernels.x]\nkind = 'running'\nsuite = 'sid'", "unknown key(s) suite"),
    ("[kernels.x]\nkind = 'path'\nimage = 3", "'image' must be a non-empty string"),
    ("kernels = 1", "no [kernels.NAME] tables"),
    ("[kernels", "not valid TOML"),
], ids=["kind", "missing-key", "unknown-key", "not-a-string", "no-kernels", "toml"])  # fmt: skip
def test_bad_catalog_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(KernelsError, match=re.escape(message)):
        parse_catalog(text)


def test_lookup_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    catalog = parse_catalog("[kernels.only]\nkind = 'running'")
    with pytest.raises(KernelsError, match="unknown kernel 'nope': known kernels are only"):
        lookup(catalog, "nope")
    with pytest.raises(KernelsError, match="does not exist"):
        lookup(catalog, str(tmp_path / "missing" / "bzImage"))
    image = tmp_path / "bzImage"
    image.write_bytes(b"x")
    assert lookup(catalog, str(image)) == PathKernel("bzImage", image)


def _fake_bzimage(path: Path, banner: bytes) -> Path:
    data = bytearray(0x400)
    data[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", data, 0x20E, 0x100)  # banner at 0x100 + 0x200
    data[0x300 : 0x300 + len(banner)] = banner
    path.write_bytes(bytes(data))
    return path


def test_bzimage_banner_reads_the_boot_header(tmp_path: Path) -> None:
    banner = b"6.1.0-50-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian 6.1.176-1\0"
    image = _fake_bzimage(tmp_path / "bzImage", banner)
    text = bzimage_banner(image)
    assert text.startswith("6.1.0-50-cloud-amd64 ")
    assert build_version(text, "6.1.0-50-cloud-amd64") == "6.1.176-1"
    assert version_tuple(build_version(text, "")) == (6, 1, 176)


def test_bogus_image_is_refused_before_any_boot(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus"
    bogus.write_bytes(b"\x7fELF not a kernel" * 100)
    with pytest.raises(KernelsError, match="is not an x86 bzImage"):
        fetch(PathKernel("bogus", bogus), print)


def test_path_kernel_without_modules_says_how_to_fix(tmp_path: Path) -> None:
    image = _fake_bzimage(tmp_path / "bzImage", b"6.13.0-rc1 (me@box) #1\0")
    with pytest.raises(KernelsError, match="no modules for 6.13.0-rc1"):
        fetch(PathKernel("mine", image), print)
    modules = tmp_path / "lib/modules/6.13.0-rc1"
    modules.mkdir(parents=True)
    (modules / "modules.dep").write_text("")
    kernel = fetch(PathKernel("mine", image), print)
    assert (kernel.release, kernel.version, kernel.modules) == ("6.13.0-rc1", "6.13.0-rc1", modules)


def test_source_kind_that_is_not_a_kernel_tree_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KernelsError, match="is not a kernel source tree"):
        fetch(SourceKernel("net-next", tmp_path), print)


class _Lists:
    """A suite's apt as `_resolved` sees it: a lists folder and a counted resolution."""

    def __init__(self, root: Path) -> None:
        self.root, self.suite, self.asked = root, "sid", 0
        (root / "lists").mkdir()
        (root / "lists" / "Packages").write_text("index v1")

    def newest(self, package: str) -> str:
        self.asked += 1
        return "1.0"

    def record(self, package: str, version: str) -> dict[str, str]:
        return {"Size": "10", "Depends": ""}


def test_a_resolution_is_reused_while_the_lists_stay_the_same(tmp_path: Path) -> None:
    apt = _Lists(tmp_path)
    first = debian._resolved(apt, "linux-image-cloud-amd64", lambda _: None)  # type: ignore[arg-type]
    again = debian._resolved(apt, "linux-image-cloud-amd64", lambda _: None)  # type: ignore[arg-type]
    assert first == again == [debian.Package("linux-image-cloud-amd64", "1.0", 10)]
    assert apt.asked == 1
    (tmp_path / "lists" / "Packages").write_text("index v2, one byte longer")
    debian._resolved(apt, "linux-image-cloud-amd64", lambda _: None)  # type: ignore[arg-type]
    assert apt.asked == 2
