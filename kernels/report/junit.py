# SPDX-License-Identifier: GPL-2.0-only
"""JUnit XML out: one file per kernel of the matrix, for CI systems that show JUnit.

Why pytest's own classname (`tests.cases.test_c01`, its junitxml's rule): a test reads the
same in every JUnit file it is in, `pytest --junitxml` on the host, `pytest --kernel ...
--junitxml` (the guest's reports replayed) and the matrix's `junit-<kernel>.xml`, so a CI's
test history follows one test whatever ran it. Which kernel ran it is the suite's business: its
name, time and timestamp, and the properties of :func:`suite_properties`, which both the matrix
file and `pytest --kernel` carry, so CI test-report views can group by kernel.

Why the `nodeid` property: JUnit's classname/name pair cannot be turned back into a pytest
node id reliably (dots in file names, nested classes); each case carries the exact id, so a
reader can match the file to the matrix's rows.
"""

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from _pytest.junitxml import mangle_test_address

from kernels.matrix.results import TestResult
from kernels.matrix.runner import KernelRun

if TYPE_CHECKING:  # the report (Jinja2) is the host's: the guest's pytest imports this module
    from kernels.report.table import Matrix

NODEID_PROPERTY = "nodeid"


def suite_properties(run: KernelRun) -> list[tuple[str, str]]:
    """What a suite says of the kernel its tests ran on: name, `uname -r`, exact build, how the
    guest ran (kvm, tcg, or host for the running kernel) and how long it took to boot."""
    properties = [("kernel", run.name), ("accel", run.accel)]
    if run.kernel is not None:
        properties += [("kernel_release", run.kernel.release),
                       ("kernel_version", run.kernel.version)]  # fmt: skip
    if run.boot_seconds is not None:
        properties.append(("boot_seconds", f"{run.boot_seconds:.1f}"))
    return properties


def write_junit(path: Path, run: KernelRun, results: list[TestResult], started: str) -> None:
    """A JUnit file for one kernel; crashes are errors whose text is the console excerpt. The
    suite's time is the kernel's whole run, boot included (a merge: its shards' added)."""
    counts = {o: sum(r.outcome == o for r in results) for o in ("fail", "crash", "skip", "xfail")}
    root = ET.Element(
        "testsuite",
        name=f"netregress on {run.name}",
        tests=str(len(results)),
        failures=str(counts["fail"]),
        errors=str(counts["crash"]),
        skipped=str(counts["skip"] + counts["xfail"]),
        time=f"{run.total_seconds:.3f}",
        timestamp=started,
    )
    suite_props = ET.SubElement(root, "properties")
    for name, value in suite_properties(run):
        ET.SubElement(suite_props, "property", name=name, value=value)
    for result in results:
        *classnames, name = mangle_test_address(result.nodeid)
        case = ET.SubElement(
            root,
            "testcase",
            classname=".".join(classnames),
            name=name,
            time=f"{result.duration:.3f}",
        )
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name=NODEID_PROPERTY, value=result.nodeid)
        for prop, value in result.properties:
            ET.SubElement(props, "property", name=prop, value=value)
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


def write_matrix(matrix: "Matrix", out_dir: Path, started: str) -> list[Path]:
    """`junit-<kernel>.xml` per kernel column, rows in matrix order (the console row last);
    `started` is the run's start (the record's), every suite's timestamp."""
    written = []
    for run in matrix.runs:
        path = out_dir / f"junit-{run.name}.xml"
        results = [c for nodeid in matrix.rows if (c := matrix.cell(nodeid, run.name))]
        write_junit(path, run, results, started)
        written.append(path)
    return written
