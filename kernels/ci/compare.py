# SPDX-License-Identifier: GPL-2.0-only
"""Is a merged matrix what one whole run writes? Every verdict file, timings masked.

Why a comparison of the written files and not of `record.read`: the files are what CI
publishes and dashboards read (matrix.md/json, JUnit, KTAP), so a merge that built the right
record but wrote a file differently must still be caught. Only what differs between two runs
of the same tests by nature is masked: durations, timestamps, and the output directory in
paths; verdicts, messages, kernel releases and test names must be equal.
"""

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

# matrix.json's per-kernel fields that are timings or paths into the output directory.
_KERNEL_TIMINGS = ("boot s", "total s", "console")
# matrix.md's kernel table columns that are timings.
_MD_TIMING_COLUMNS = ("boot s", "total s")
_JUNIT_TIMINGS = ("time", "timestamp")
_TIMING_PROPERTY = "_seconds"  # a suite property such as boot_seconds


def _json(path: Path) -> Any:
    data = json.loads(path.read_text())
    for kernel in data.get("kernels", []):
        for key in _KERNEL_TIMINGS:
            kernel.pop(key, None)
    return data


def _markdown(path: Path) -> list[str]:
    """The lines, with the cells under a timing column header replaced by `*`."""
    out: list[str] = []
    masked: list[int] = []
    for line in path.read_text().splitlines():
        cells = line.split(" | ")
        if line.startswith("| ") and any(name in cells for name in _MD_TIMING_COLUMNS):
            masked = [i for i, cell in enumerate(cells) if cell in _MD_TIMING_COLUMNS]
        elif not line.startswith("|"):
            masked = []
        elif masked and not line.startswith("| ---"):
            cells = ["*" if i in masked else cell for i, cell in enumerate(cells)]
        out.append(" | ".join(cells))
    return out


def _junit(path: Path, directory: Path) -> list[str]:
    """Every element as one line: tag, attributes less timings, text; paths made relative."""
    lines: list[str] = []
    for element in ET.parse(path).getroot().iter():
        attrs = {k: v for k, v in element.attrib.items() if k not in _JUNIT_TIMINGS}
        if element.tag == "property" and attrs.get("name", "").endswith(_TIMING_PROPERTY):
            attrs["value"] = "*"
        text = (element.text or "").strip()
        lines.append(f"{element.tag} {sorted(attrs.items())} {text}")
    return [line.replace(str(directory), "DIR") for line in lines]


def _ktap(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _reader(name: str, directory: Path) -> Any:
    path = directory / name
    if name == "matrix.json":
        return _json(path)
    if name == "matrix.md":
        return _markdown(path)
    if name.startswith("junit-"):
        return _junit(path, directory)
    return _ktap(path)


def verdict_files(directory: Path) -> list[str]:
    """The files a matrix directory publishes whose content is verdicts."""
    names = ["matrix.md", "matrix.json"]
    names += sorted(p.name for p in directory.glob("junit-*.xml"))
    names += sorted(p.name for p in directory.glob("ktap-*.tap"))
    return names


def _first_difference(left: Any, right: Any) -> str:
    if isinstance(left, list) and isinstance(right, list):
        for index, (a, b) in enumerate(zip(left, right, strict=False)):
            if a != b:
                return f"line {index + 1}: {a!r} != {b!r}"
        return f"{len(left)} lines != {len(right)} lines"
    return "the verdicts differ"


def differences(merged: Path, single: Path) -> list[str]:
    """What differs between two matrix directories (empty: the same verdicts everywhere)."""
    found: list[str] = []
    names = verdict_files(single)
    missing = sorted(set(names) ^ set(verdict_files(merged)))
    found += [f"{name}: written by only one of the two" for name in missing]
    for name in names:
        if name in missing:
            continue
        left, right = _reader(name, merged), _reader(name, single)
        if left != right:
            found.append(f"{name}: {_first_difference(left, right)}")
    if not (merged / "matrix.html").is_file() or not (single / "matrix.html").is_file():
        found.append("matrix.html: missing")
    return found


def verdict_count(directory: Path) -> int:
    """How many (test, kernel) cells a matrix.json holds: what a comparison covered."""
    tests = json.loads((directory / "matrix.json").read_text())["tests"]
    return sum(len(cells) for cells in tests.values())
