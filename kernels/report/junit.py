"""JUnit XML in and out: the guest's pytest report in, one normalized file per kernel out.

Why the `nodeid` property: JUnit's classname/name pair cannot be turned back into a pytest
node id reliably (dots in file names, nested classes); the guest plugin records the exact id as
a testcase property, so host reports and matrix rows use real node ids.
"""

import xml.etree.ElementTree as ET
from pathlib import Path

from kernels.errors import KernelsError
from kernels.matrix.results import Outcome, TestResult

NODEID_PROPERTY = "nodeid"


def _nodeid(case: ET.Element) -> str:
    for prop in case.iter("property"):
        if prop.get("name") == NODEID_PROPERTY:
            return prop.get("value", "")
    return f"{case.get('classname', '')}::{case.get('name', '')}"


def _properties(case: ET.Element) -> tuple[tuple[str, str], ...]:
    """Every user property except the node id, in order."""
    pairs = ((prop.get("name", ""), prop.get("value", "")) for prop in case.iter("property"))
    return tuple(pair for pair in pairs if pair[0] != NODEID_PROPERTY)


def _outcome(case: ET.Element) -> tuple[Outcome, str, str]:
    for tag in ("failure", "error"):
        node = case.find(tag)
        if node is not None:
            return "fail", node.get("message", ""), node.text or ""
    node = case.find("skipped")
    if node is not None:
        outcome: Outcome = "xfail" if node.get("type") == "pytest.xfail" else "skip"
        return outcome, node.get("message", ""), node.text or ""
    return "pass", "", ""


def read_junit(path: Path) -> list[TestResult]:
    """The results in a pytest JUnit file (a test with a failure and an error counts once)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise KernelsError(f"cannot read JUnit results {path}: {exc}") from None
    results: dict[str, TestResult] = {}
    for case in root.iter("testcase"):
        outcome, message, details = _outcome(case)
        nodeid = _nodeid(case)
        if nodeid in results and results[nodeid].outcome == "fail":
            continue
        results[nodeid] = TestResult(
            nodeid, outcome, message, details, float(case.get("time", 0)), _properties(case)
        )
    return list(results.values())


def write_junit(path: Path, suite: str, results: list[TestResult]) -> None:
    """A JUnit file for one kernel; crashes are errors whose text is the console excerpt."""
    counts = {o: sum(r.outcome == o for r in results) for o in ("fail", "crash", "skip", "xfail")}
    root = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(results)),
        failures=str(counts["fail"]),
        errors=str(counts["crash"]),
        skipped=str(counts["skip"] + counts["xfail"]),
    )
    for result in results:
        file_part, _, name = result.nodeid.rpartition("::")
        case = ET.SubElement(
            root, "testcase", classname=file_part, name=name, time=f"{result.duration:.3f}"
        )
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name=NODEID_PROPERTY, value=result.nodeid)
        for name, value in result.properties:
            ET.SubElement(props, "property", name=name, value=value)
        tag = {"fail": "failure", "crash": "error", "skip": "skipped", "xfail": "skipped"}.get(
            result.outcome
        )
        if tag:
            node = ET.SubElement(case, tag, message=result.message)
            if result.outcome in ("skip", "xfail"):
                node.set("type", f"pytest.{result.outcome}")
            node.text = result.details
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
