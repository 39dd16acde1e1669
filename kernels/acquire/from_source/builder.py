# SPDX-License-Identifier: GPL-2.0-only
"""One kernel build, start to finish: patches → config → make → install a bootable result.

Why this layout of the cache: one out-of-tree build dir per source (`obj/<source id>`), kept
across builds, is what makes a rebuild with one changed file (another patch, the next bisect
step) take a minute instead of a cold build; the result dir (`built/<name>`) holds only what
the matrix boots: `bzImage` and `lib/modules/<release>`.
"""

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kernels.acquire.from_source import config, make
from kernels.acquire.from_source.patches import Patch, sync_patches
from kernels.acquire.from_source.source import SourceTree
from kernels.acquire.kernel import BUILD_RECORD
from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from kernels.progress import Status


@dataclass(frozen=True)
class BuiltKernel:
    """A build result the matrix boots as a `path` kernel (image + modules dir)."""

    name: str
    image: Path
    modules: Path
    release: str
    seconds: float


@dataclass(frozen=True)
class BuildRequest:
    """What to build: a source, patches (cache trees only; files, or patches already read, as
    a mutant carries its own), extra fragments, a result name."""

    source: SourceTree
    patches: tuple[Path | Patch, ...] = ()
    fragments: tuple[Path, ...] = ()
    name: str | None = None
    out: Path | None = None
    jobs: int = os.cpu_count() or 1

    def result_name(self) -> str:
        """The source id plus the patch names: stock and patched builds never overwrite each
        other."""
        if self.name:
            return self.name
        stems = (Path(p.name if isinstance(p, Patch) else p).stem for p in self.patches)
        return "+".join([self.source.id, *stems])


def _configure(req: BuildRequest, obj: Path, log: Path) -> None:
    fragments = [config.FRAGMENT, *req.fragments]
    allconfig = obj / "netregress.allconfig"
    allconfig.write_text(config.allconfig(req.source.path, fragments))
    make.run_make(
        req.source.path, obj, ["alldefconfig"], log, "config", 1,
        env={"KCONFIG_ALLCONFIG": str(allconfig)},
    )  # fmt: skip
    if missing := config.missing_built_ins(fragments, obj / ".config"):
        raise KernelsError(
            f"the config lacks {', '.join(missing)} after the merge (a dependency is off or the "
            f"symbol does not exist in this kernel); see {obj / '.config'}"
        )


def _install(req: BuildRequest, obj: Path, log: Path) -> tuple[Path, Path, str]:
    """Copy bzImage and install modules into a fresh result dir, replacing the old one whole."""
    release = make.query(req.source.path, obj, "kernelrelease")
    dest = req.out or cache_dir("built") / req.result_name()
    staging = dest.with_name(dest.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    make.run_make(
        req.source.path, obj, ["modules_install", f"INSTALL_MOD_PATH={staging}"], log,
        "modules_install", 1,
    )  # fmt: skip
    shutil.copy2(obj / "arch/x86/boot/bzImage", staging / "bzImage")
    if dest.exists():
        shutil.rmtree(dest)
    staging.rename(dest)
    return dest / "bzImage", dest / "lib/modules" / release, release


def _inputs_digest(req: BuildRequest, patches: list[Patch]) -> str:
    """What a result was built from: the source, each patch's text and direction, and every
    config fragment's text."""
    digest = hashlib.sha256(req.source.id.encode() + b"\0")
    for patch in patches:
        digest.update(f"{patch.reverse}\0{patch.text}\0".encode())
    for fragment in (config.FRAGMENT, *req.fragments):
        digest.update(fragment.read_bytes() + b"\0")
    return digest.hexdigest()


def _current_result(req: BuildRequest, built_from: str) -> BuiltKernel | None:
    """The result dir's kernel when it was built from exactly these inputs. Only for source
    packages we extracted ourselves: a user's tree can change under the same id."""
    dest = req.out or cache_dir("built") / req.result_name()
    try:
        info = json.loads((dest / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not req.source.owned or info.get("inputs") != built_from:
        return None
    image, modules = dest / "bzImage", dest / "lib/modules" / str(info.get("release"))
    if not (image.is_file() and modules.is_dir()):
        return None
    return BuiltKernel(req.result_name(), image, modules, str(info["release"]), 0.0)


def build(req: BuildRequest, status: Status) -> BuiltKernel:
    """Build `req` incrementally in the source's shared build dir and install the result."""
    patches = [p if isinstance(p, Patch) else Patch.read(p) for p in req.patches]
    if patches and not req.source.owned:
        raise KernelsError(
            f"--patch only applies to source packages extracted into the cache; netregress never "
            f"writes to your tree {req.source.path}: commit the patch there (git am) instead"
        )
    start = time.monotonic()
    obj = cache_dir("obj", req.source.id)
    log = obj / "netregress-build.log"
    built_from = _inputs_digest(req, patches)
    with locked(obj.with_name(obj.name + ".lock")):
        if (done := _current_result(req, built_from)) is not None:
            status(f"{done.name} is up to date ({done.image})")
            return done
        log.write_text("")  # under the lock: a concurrent build of the same tree waits
        if req.source.owned:
            record = req.source.path.with_name(req.source.path.name + ".applied")
            sync_patches(req.source.path, record, patches, status)
        status(f"building {req.source.origin} in {obj} (log: {log})")
        _configure(req, obj, log)
        make.run_make(req.source.path, obj, ["bzImage", "modules"], log, "make", req.jobs)
        image, modules, release = _install(req, obj, log)
        result = BuiltKernel(req.result_name(), image, modules, release, time.monotonic() - start)
        git = asdict(req.source.git) if req.source.git else None
        info = {**asdict(result), "source": req.source.origin, "patches": [p.name for p in patches],
                "inputs": built_from, "git": git}  # fmt: skip
        (image.parent / BUILD_RECORD).write_text(json.dumps(info, indent=2, default=str))
    return result
