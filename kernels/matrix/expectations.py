# SPDX-License-Identifier: GPL-2.0-only
"""Per-kernel expectations: known kernel bugs and gaps, applied as strict xfail.

Why strict: a known failure keeps the matrix green, and the day the kernel is fixed the test
XPASSes, turns red, and someone updates `expectations.toml` with the fixing version. An entry
names a test pattern (fnmatch on the node id) and kernels, by version range and/or by name.
"""

import fnmatch
import operator
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernels.acquire.kernel import version_tuple
from kernels.errors import KernelsError

DEFAULT_EXPECTATIONS = Path(__file__).resolve().parents[1] / "expectations.toml"
_OPS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq,
    "!=": operator.ne, ">": operator.gt, "<": operator.lt,
}  # fmt: skip
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)\s*$")
_LINK = re.compile(r" \((?P<link>https?://[^\s()]+)\)$")


@dataclass(frozen=True)
class VersionRange:
    """A conjunction of comparisons such as ">=5.10, <6.5" on upstream versions."""

    clauses: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def parse(cls, text: str) -> "VersionRange":
        clauses = []
        for part in text.split(","):
            match = _CLAUSE.match(part)
            if not match:
                raise KernelsError(
                    f"bad version range {text!r}: use comparisons like '>=5.10, <6.5'"
                )
            clauses.append((match.group(1), version_tuple(match.group(2))))
        return cls(tuple(clauses))

    def __contains__(self, version: tuple[int, ...]) -> bool:
        # Compare on the clause's precision: "<6.5" holds for 6.4.99 and not for 6.5.3.
        return all(_OPS[op](version[: len(bound)], bound) for op, bound in self.clauses)


@dataclass(frozen=True)
class Expectation:
    """A test (pattern) expected to fail on some kernels, with why and where it is tracked."""

    test: str
    reason: str
    link: str = ""
    versions: VersionRange | None = None
    kernels: tuple[str, ...] = ()

    def applies(self, nodeid: str, kernel: str, version: tuple[int, ...]) -> bool:
        """True if this entry covers `nodeid` on the named kernel of that version."""
        if not fnmatch.fnmatchcase(nodeid, self.test):
            return False
        if self.kernels and kernel not in self.kernels:
            return False
        return self.versions is None or version in self.versions

    @property
    def why(self) -> str:
        """The xfail reason: the story plus the link, so a report reader can follow it."""
        return f"{self.reason} ({self.link})" if self.link else self.reason


def link_of(why: str) -> str:
    """The link of an xfail reason :attr:`Expectation.why` wrote, or "": a result read back
    after the run (the matrix record) keeps the reason, not the entry it came from."""
    found = _LINK.search(why)
    return found["link"] if found else ""


def _entry(raw: object, where: str, number: int) -> Expectation:
    label = f"{where}: [[expect]] #{number}"
    if not isinstance(raw, dict):
        raise KernelsError(f"{label} must be a table")
    unknown = set(raw) - {"test", "reason", "link", "versions", "kernels"}
    if unknown:
        raise KernelsError(f"{label} has unknown key(s) {', '.join(sorted(unknown))}")
    if not isinstance(raw.get("test"), str) or not isinstance(raw.get("reason"), str):
        raise KernelsError(f"{label} needs 'test' (a node id pattern) and 'reason' strings")
    if "versions" not in raw and "kernels" not in raw:
        raise KernelsError(f"{label} needs 'versions' and/or 'kernels' to say where it applies")
    kernels = raw.get("kernels", [])
    if not isinstance(kernels, list) or not all(isinstance(k, str) for k in kernels):
        raise KernelsError(f"{label}: 'kernels' must be a list of kernel names")
    versions = None
    if "versions" in raw:
        try:
            versions = VersionRange.parse(str(raw["versions"]))
        except KernelsError as exc:
            raise KernelsError(f"{label}: {exc}") from None
    return Expectation(
        test=raw["test"],
        reason=raw["reason"],
        link=str(raw.get("link", "")),
        versions=versions,
        kernels=tuple(kernels),
    )


def parse_expectations(text: str, where: str = "expectations.toml") -> list[Expectation]:
    """Parse expectations TOML text (a list of [[expect]] tables)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KernelsError(f"{where}: not valid TOML: {exc}") from None
    return [_entry(raw, where, n) for n, raw in enumerate(data.get("expect", []), 1)]


def load_expectations(path: Path = DEFAULT_EXPECTATIONS) -> list[Expectation]:
    """Read and parse an expectations file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise KernelsError(f"cannot read expectations {path}: {exc.strerror}") from None
    return parse_expectations(text, str(path))


def expected_failure(
    expectations: list[Expectation], nodeid: str, kernel: str, version: tuple[int, ...]
) -> Expectation | None:
    """The first entry that covers this test on this kernel, if any."""
    for entry in expectations:
        if entry.applies(nodeid, kernel, version):
            return entry
    return None
