# SPDX-License-Identifier: GPL-2.0-only
"""Debian kernel packages: resolve the newest build of a suite, download, extract, depmod.

Why a private apt setup under the cache: the extra suites (bullseye, trixie, sid) must never
reach the machine's own apt sources (an `apt upgrade` would pull sid), and nothing may be
installed into /boot. `apt-get download` + `dpkg-deb -x` give the files without installing.
"""

import hashlib
import json
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kernels.acquire.catalog import DebianKernel
from kernels.acquire.kernel import BootableKernel
from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from kernels.progress import Status

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
HOST_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
LISTS_MAX_AGE = 3600.0  # seconds: "current version at fetch time" without an update per run
UNSTABLE = {"sid", "unstable", "experimental"}
# Versioned packages of one build carry its files (sid: linux-base-<release> holds
# modules.builtin); initramfs-tools, the generic linux-base and flavour metapackages do not.
_KERNEL_PACKAGE = re.compile(r"^linux-(image|binary|modules|base)-\d")
_PINNED_DEP = re.compile(r"^\s*(\S+)\s*\(\s*=\s*([^)\s]+)\s*\)")


def mirror() -> str:
    """The archive URI the machine already uses, so no new host is contacted.

    Why not the security archive too: its pool is not reliably mirrored (bullseye-security
    lists builds whose .deb answers 404 here); `<suite>-updates` on the archive is.
    """
    try:
        text = HOST_SOURCES.read_text()
    except OSError:
        text = ""
    found: list[str] = re.findall(r"^URIs:\s*(\S+)", text, re.M)
    uris = [uri for uri in found if "security" not in uri]
    if not uris:
        raise KernelsError(
            f"no Debian archive found in {HOST_SOURCES}: Debian kernels are "
            f"fetched through the mirror this machine's apt already uses"
        )
    return uris[0]


def security_mirror() -> str:
    """The security archive URI the machine uses, else the archive's sibling (Debian's own
    layout: `…/debian` and `…/debian-security`)."""
    try:
        found: list[str] = re.findall(r"^URIs:\s*(\S+)", HOST_SOURCES.read_text(), re.M)
    except OSError:
        found = []
    return next((uri for uri in found if "security" in uri), mirror().rstrip("/") + "-security")


class AptSuite:
    """apt-get/apt-cache confined to one suite's lists under the cache.

    `security`: the suite's security pocket too, in lists of their own. Why apart: the
    matrix's `suite` kernels stay the suite's point release (their figures compare across
    runs), while a release bisect and a pinned `version` need every build the archive still
    serves, and most of a stable suite's series lives only in its security pocket (bookworm:
    6.1.0-47 in the point release, -48 … -56 in bookworm-security)."""

    def __init__(self, suite: str, security: bool = False) -> None:
        self.suite = suite
        self.root = cache_dir("apt", f"{suite}+security" if security else suite)
        suites = [suite] if suite in UNSTABLE else [suite, f"{suite}-updates"]
        lines = [f"deb [signed-by={KEYRING}] {mirror()} {name} main" for name in suites]
        if security and suite not in UNSTABLE:
            lines.append(f"deb [signed-by={KEYRING}] {security_mirror()} {suite}-security main")
        (self.root / "sources.list").write_text("\n".join(lines) + "\n")
        for sub in ("lists/partial", "cache/archives/partial", "parts"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def _options(self) -> list[str]:
        root = self.root
        settings = {
            "Dir::Etc::SourceList": root / "sources.list",
            "Dir::Etc::SourceParts": root / "parts",
            "Dir::State::Lists": root / "lists",
            "Dir::Cache": root / "cache",
            "APT::Sandbox::User": "root",
            "Acquire::Languages": "none",
            "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled": "false",
            "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled": "false",
            "Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled": "false",
            "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled": "false",
        }
        return [arg for key, value in settings.items() for arg in ("-o", f"{key}={value}")]

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        if shutil.which(tool) is None:
            raise KernelsError(f"{tool} is missing: Debian kernels are fetched with apt")
        proc = subprocess.run(
            [tool, *self._options(), *args], cwd=cwd, capture_output=True, text=True
        )
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise KernelsError(f"{tool} {' '.join(args)} failed: {' | '.join(detail)}")
        return proc.stdout

    def refresh(self, status: Status) -> None:
        """`apt-get update` for this suite unless its lists are recent."""
        stamp = self.root / "updated"
        if stamp.exists() and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE:
            return
        status(f"updating the package lists of {self.suite}")
        try:
            self.run("apt-get", "update")
        except KernelsError as exc:
            if not stamp.exists():
                raise KernelsError(f"cannot read the {self.suite} package lists: {exc}") from None
            status(f"warning: using older {self.suite} package lists ({exc})")
            return
        stamp.touch()

    def newest(self, package: str) -> str:
        """The newest version of `package` in this suite (madison lists newest first)."""
        for line in self.run("apt-cache", "madison", package).splitlines():
            fields = [field.strip() for field in line.split("|")]
            if len(fields) == 3 and fields[0] == package:
                return fields[1]
        raise KernelsError(f"package {package} is not in Debian {self.suite}")

    def record(self, package: str, version: str) -> dict[str, str]:
        """The control fields of one exact package version."""
        text = self.run("apt-cache", "show", f"{package}={version}")
        fields: dict[str, str] = {}
        for line in text.split("\n\n", 1)[0].splitlines():
            key, sep, value = line.partition(":")
            if sep and not key.startswith(" "):
                fields[key] = value.strip()
        return fields

    def download(self, package: str, version: str, into: Path) -> Path:
        """Download one .deb into `into` (no install) and return its path."""
        self.run("apt-get", "download", f"{package}={version}", cwd=into)
        found = sorted(into.glob(f"{package}_*.deb"))
        if not found:
            raise KernelsError(f"apt-get download {package}={version} produced no .deb")
        return found[-1]


@dataclass(frozen=True)
class Package:
    """One package of a kernel build, with its download size (for progress)."""

    name: str
    version: str
    size: int


def kernel_packages(apt: AptSuite, root: str) -> list[Package]:
    """The packages holding one kernel build: follow the pinned deps of `root` (the flavour's
    metapackage linux-image-<flavour>, or one ABI's linux-image-<abi>-<flavour>).

    Why follow dependencies: the layout changes between releases (sid splits the image into
    linux-binary-*/linux-modules-* behind a metapackage), but the pinned `(= version)` chain
    from the flavour metapackage always reaches every file-carrying package.
    """
    todo = [(root, apt.newest(root))]
    seen: dict[str, Package] = {}
    while todo:
        name, version = todo.pop()
        if name in seen:
            continue
        fields = apt.record(name, version)
        seen[name] = Package(name, version, int(fields.get("Size", "0")))
        for dep in fields.get("Depends", "").split(","):
            for alternative in dep.split("|"):
                match = _PINNED_DEP.match(alternative)
                if match and _KERNEL_PACKAGE.match(match.group(1)):
                    todo.append((match.group(1), match.group(2)))
    return sorted(seen.values(), key=lambda package: package.name)


def _resolved(apt: AptSuite, root: str, status: Status) -> list[Package]:
    """:func:`kernel_packages`, remembered for as long as the suite's lists are the same files.

    Why: the resolution runs apt-cache over the whole index several times (1-3 s per suite),
    and every matrix run does it for every kernel before the first guest can boot. The same
    lists give the same answer, so it is kept next to them, keyed by their names, sizes and
    modification times; `refresh` replacing a list changes the key."""
    lists = sorted(path for path in (apt.root / "lists").iterdir() if path.is_file())
    state = [(path.name, path.stat().st_size, path.stat().st_mtime_ns) for path in lists]
    key = hashlib.sha256(json.dumps(state).encode()).hexdigest()
    memo = apt.root / f"resolved-{root}.json"
    try:
        saved = json.loads(memo.read_text())
        if saved["lists"] == key:
            return [Package(**package) for package in saved["packages"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or unreadable: resolve again
    status(f"resolving {root} in {apt.suite}")
    packages = kernel_packages(apt, root)
    memo.write_text(json.dumps({"lists": key, "packages": [asdict(p) for p in packages]}))
    return packages


def _find_tree(root: Path) -> tuple[Path, Path]:
    """(vmlinuz, modules dir) in an extracted tree: boot/ + (usr/)lib/modules, or sid's layout."""
    bases = (root / "usr/lib/modules", root / "lib/modules")
    module_dirs = sorted({path.resolve() for base in bases for path in base.glob("*")})
    if len(module_dirs) != 1:
        raise KernelsError(f"{root}: expected one lib/modules/<release>, found {len(module_dirs)}")
    modules = module_dirs[0]
    for image in [modules / "vmlinuz", *sorted((root / "boot").glob("vmlinuz-*"))]:
        if image.is_file():
            return image, modules
    raise KernelsError(f"{root}: the packages contain no vmlinuz")


def _extract(packages: list[Package], apt: AptSuite, dest: Path, status: Status) -> None:
    """Download and unpack the packages into `dest`, then generate modules.dep with depmod."""
    debs = dest / "debs"
    debs.mkdir(parents=True)
    root = dest / "root"
    for number, package in enumerate(packages, 1):
        status(
            f"downloading {package.name} {package.version} "
            f"({package.size / 1e6:.0f} MB, {number}/{len(packages)})"
        )
        deb = apt.download(package.name, package.version, debs)
        proc = subprocess.run(
            ["dpkg-deb", "-x", str(deb), str(root)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise KernelsError(f"dpkg-deb -x {deb.name} failed: {proc.stderr.strip()}")
    image, modules = _find_tree(root)
    if not (modules / "modules.builtin").is_file():
        raise KernelsError(f"{modules}: no modules.builtin (a package of the build is missing)")
    if not (root / "lib").exists():
        # depmod -b looks under <root>/lib/modules; merged-usr layouts only ship usr/lib.
        (root / "lib").symlink_to("usr/lib")
    status(f"depmod {modules.name}")
    proc = subprocess.run(
        ["depmod", "-a", "-b", str(root), modules.name], capture_output=True, text=True
    )
    dep = root / "lib/modules" / modules.name / "modules.dep"
    if proc.returncode != 0 or not dep.is_file() or dep.stat().st_size == 0:
        raise KernelsError(f"depmod failed for {modules.name}: {proc.stderr.strip()}")
    shutil.rmtree(debs)


def unpacked_tree(image: Path) -> Path | None:
    """The tree :func:`fetch_debian` unpacked a kernel's packages into (their documentation
    included), from the kernel's image; None for an image that is not one of its."""
    for folder in image.parents:
        if folder.name == "root" and (folder.parent / "kernel.json").is_file():
            return folder
    return None


def fetch_debian(spec: DebianKernel, status: Status) -> BootableKernel:
    """The newest build of the spec's suite (or the build its `version` pins), from the cache
    or downloaded into it."""
    apt = AptSuite(spec.suite, security=bool(spec.version))
    root = f"linux-image-{spec.version + '-' if spec.version else ''}{spec.flavour}"
    with locked(apt.root / "lock"):
        apt.refresh(status)
        packages = _resolved(apt, root, status)
    version = packages[0].version
    dest = cache_dir("debian", f"{spec.suite}-{spec.flavour}") / version
    meta = dest / "kernel.json"
    with locked(dest.parent / f"{dest.name}.lock"):
        if not meta.is_file():
            if dest.exists():
                shutil.rmtree(dest)  # a half-done extraction from an interrupted run
            _extract(packages, apt, dest, status)
            image, modules = _find_tree(dest / "root")
            meta.write_text(
                json.dumps(
                    {
                        "release": modules.name,
                        "version": version,
                        "image": str(image),
                        "modules": str(modules),
                        "packages": [f"{p.name}={p.version}" for p in packages],
                    },
                    indent=2,
                )
            )
    info = json.loads(meta.read_text())
    return BootableKernel(
        name=spec.name,
        release=info["release"],
        version=info["version"],
        image=Path(info["image"]),
        modules=Path(info["modules"]),
    )
