# SPDX-License-Identifier: GPL-2.0-only
"""The kernel catalog: `matrix.toml` parsed into typed kernel descriptions.

Why a closed set of kinds: each kind has its own fetch path (apt, a local build, the host), and
an unknown key or kind is almost always a typo the user wants to hear about, not silently skip.
"""

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernels.errors import KernelsError

DEFAULT_CATALOG = Path(__file__).resolve().parents[1] / "matrix.toml"


@dataclass(frozen=True)
class _Spec:
    """What every kernel has: its catalog name, and whether a bare `scripts/matrix` runs it."""

    name: str
    default: bool = field(default=True, kw_only=True)


@dataclass(frozen=True)
class DebianKernel(_Spec):
    """A Debian kernel package: the newest build of `suite` at fetch time, or, with `version`
    (an ABI such as ``6.1.0-47``: the package ``linux-image-6.1.0-47-<flavour>``), exactly that
    build, from any pocket of the suite (security updates included).

    Why a pin: a report judged particular builds (a release bisect walks a suite's series), and
    re-running it must boot those, not whatever the suite serves by then."""

    suite: str
    flavour: str
    version: str = ""


@dataclass(frozen=True)
class PathKernel(_Spec):
    """A kernel built elsewhere: a bzImage plus its modules (a `lib/modules/<release>` dir)."""

    image: Path
    modules: Path | None = None


@dataclass(frozen=True)
class SourceKernel(_Spec):
    """A kernel source tree to build (placeholder: building is a later issue)."""

    tree: Path


@dataclass(frozen=True)
class RunningKernel(_Spec):
    """The host's own kernel: no VM, the suite runs directly on the machine."""


KernelSpec = DebianKernel | PathKernel | SourceKernel | RunningKernel

_FIELDS: dict[str, tuple[Callable[..., KernelSpec], set[str], set[str]]] = {
    # kind: (class, required keys, optional keys)
    "debian": (DebianKernel, {"suite", "flavour"}, {"version"}),
    "path": (PathKernel, {"image"}, {"modules"}),
    "source": (SourceKernel, {"tree"}, set()),
    "running": (RunningKernel, set(), set()),
}
_PATH_KEYS = {"image", "modules", "tree"}


def _spec(name: str, table: Any, where: str) -> KernelSpec:
    if not isinstance(table, dict):
        raise KernelsError(f"{where}: [kernels.{name}] must be a table")
    kind = table.get("kind")
    if kind not in _FIELDS:
        raise KernelsError(
            f"{where}: kernel '{name}' has kind {kind!r}; expected one of {', '.join(_FIELDS)}"
        )
    cls, required, optional = _FIELDS[kind]
    keys = set(table) - {"kind", "default"}
    if missing := required - keys:
        raise KernelsError(f"{where}: kernel '{name}' ({kind}) lacks {', '.join(sorted(missing))}")
    if unknown := keys - required - optional:
        raise KernelsError(
            f"{where}: kernel '{name}' ({kind}) has unknown key(s) {', '.join(sorted(unknown))}"
        )
    values: dict[str, Any] = {"name": name, "default": bool(table.get("default", True))}
    for key in keys:
        value = table[key]
        if not isinstance(value, str) or not value:
            raise KernelsError(f"{where}: kernel '{name}': '{key}' must be a non-empty string")
        values[key] = Path(value).expanduser() if key in _PATH_KEYS else value
    return cls(**values)


def parse_catalog(text: str, where: str = "matrix.toml") -> dict[str, KernelSpec]:
    """Parse catalog TOML text; `where` names the file in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KernelsError(f"{where}: not valid TOML: {exc}") from None
    kernels = data.get("kernels")
    if not isinstance(kernels, dict) or not kernels:
        raise KernelsError(f"{where}: no [kernels.NAME] tables")
    return {name: _spec(name, table, where) for name, table in kernels.items()}


def load_catalog(path: Path = DEFAULT_CATALOG) -> dict[str, KernelSpec]:
    """Read and parse a catalog file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise KernelsError(f"cannot read kernel catalog {path}: {exc.strerror}") from None
    return parse_catalog(text, str(path))


def select(catalog: dict[str, KernelSpec], wanted: list[str] | None) -> list[KernelSpec]:
    """The kernels to run: the named ones (names or bzImage paths), or every default one."""
    if not wanted:
        return [spec for spec in catalog.values() if spec.default]
    return [lookup(catalog, item) for item in wanted]


def lookup(catalog: dict[str, KernelSpec], item: str) -> KernelSpec:
    """A catalog name, or a path to a kernel image (its modules are looked for nearby)."""
    if item in catalog:
        return catalog[item]
    if "/" in item or Path(item).exists():
        path = Path(item).expanduser().resolve()
        if not path.is_file():
            raise KernelsError(f"kernel image {item} does not exist (or is not a file)")
        return PathKernel(name=path.name, image=path)
    raise KernelsError(
        f"unknown kernel '{item}': known kernels are {', '.join(catalog)} "
        "(or give the path of a bzImage)"
    )
