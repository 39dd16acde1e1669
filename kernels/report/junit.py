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

# No public name: the classname/name split of pytest's own --junitxml, which ours must match.
from _pytest.junitxml import mangle_test_address

from kernels.matrix.results import Outcome, TestResult
from kernels.matrix.runner import KernelRun
from kernels.report.model import Matrix
from kernels.report.record import Record
from netregress.session import KERNEL_PROPERTY

NODEID_PROPERTY = "nodeid"
_TAGS = {
    Outcome.FAIL: "failure",
    Outcome.CRASH: "error",
    Outcome.SKIP: "skipped",
    Outcome.XFAIL: "skipped",
}


def suite_properties(run: KernelRun) -> list[tuple[str, str]]:
    """What a suite says of the kernel its tests ran on: the properties every report of a
    kernel under test carries (netregress.session: name, how it ran, `uname -r`, exact build;
    the first two only for a kernel never fetched), then :func:`boot_properties`."""
    kernel = run.under_test()
    if kernel is None:
        return [(KERNEL_PROPERTY, run.name), ("accel", run.accel), *boot_properties(run)]
    return [*kernel.properties(), *boot_properties(run)]


def boot_properties(run: KernelRun) -> list[tuple[str, str]]:
    """How long its guest took to boot, once one booted."""
    return [] if run.boot_seconds is None else [("boot_seconds", f"{run.boot_seconds:.1f}")]


def write_junit(path: Path, run: KernelRun, results: list[TestResult], started: str) -> None:
    """A JUnit file for one kernel; crashes are errors whose text is the console excerpt. The
    suite's time is the kernel's whole run, boot included (a merge: its shards' added)."""
    counts = {o: sum(r.outcome == o for r in results) for o in Outcome}
    root = ET.Element(
        "testsuite",
        name=f"netregress on {run.name}",
        tests=str(len(results)),
        failures=str(counts[Outcome.FAIL]),
        errors=str(counts[Outcome.CRASH]),
        skipped=str(counts[Outcome.SKIP] + counts[Outcome.XFAIL]),
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
        tag = _TAGS.get(result.outcome)
        if tag:
            node = ET.SubElement(case, tag, message=result.message)
            if result.outcome in (Outcome.SKIP, Outcome.XFAIL):
                node.set("type", f"pytest.{result.outcome}")
            node.text = result.details
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def write(matrix: Matrix, rec: Record, out_dir: Path) -> list[Path]:
    """`junit-<kernel>.xml` per kernel column, rows in matrix order (the console row last);
    the record's start is every suite's timestamp."""
    written = []
    for run in matrix.runs:
        path = out_dir / f"junit-{run.name}.xml"
        write_junit(path, run, matrix.column(run.name), rec.started)
        written.append(path)
    return written
