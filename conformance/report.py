# SPDX-License-Identifier: GPL-2.0-only
"""The terminal report of a conformance run: environment, agreement table, false passes,
and the reproducible disagreements grouped by their first error.

It reads only the JSON document, so a run inside a VM guest (``--kernel``) is reported on
the host exactly like a local one.
"""

from typing import Any

from .environment import describe

_COLUMNS = (
    "runs",
    "compared",
    "builtin PASS",
    "reference PASS",
    "agree 1st",
    "flakes",
    "reproducible",
    "false passes",
    "agreement",
)


def render(doc: dict[str, Any]) -> str:
    out = [
        f"conformance: corpus {doc['corpus']} ({doc['convention']} conventions), "
        f"{doc['summary']['runs']} runs, reference: {_reference(doc)}"
    ]
    if "kernel" in doc:
        kernel = doc["kernel"]
        out.append(f"  guest kernel {kernel['name']} {kernel['version']} ({kernel['accel']})")
    out += [f"  {line}" for line in describe(doc["environment"])]
    if doc["reference"]["kind"] == "none":
        s = doc["summary"]
        failed = [
            f"  {e['script']} [{e['variant']}]: {e['runs']['builtin']['first_error']}"
            for e in doc["entries"]
            if e["runs"]["builtin"]["verdict"] != "PASS"
        ]
        return (
            "\n".join(
                out
                + [
                    f"builtin engine: {s['passed']['builtin']} of {s['runs']} runs "
                    f"passed (no reference to compare with)",
                    *failed,
                ]
            )
            + "\n"
        )
    rows = [(variant, s) for variant, s in doc["per_variant"].items()]
    rows.append(("all", doc["summary"]))
    table = [("variant", *_COLUMNS)]
    for name, s in rows:
        table.append(
            (
                name,
                str(s["runs"]),
                str(s["compared"]),
                str(s["passed"]["builtin"]),
                str(s["passed"]["reference"]),
                str(s["agreed"]),
                str(s["flakes"]),
                str(s["reproducible"]),
                str(len(s["false_passes"])),
                f"{s['agreement_percent']:.1f} %",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    out.append("")
    out += [
        "  ".join(
            cell.rjust(w) if i else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in table
    ]
    summary = doc["summary"]
    ratio = summary["median_wall_ratio"]
    if ratio is not None:
        out.append(f"median wall per run, builtin / reference: {ratio:.2f}x")
    false_passes = summary["false_passes"]
    out.append("")
    out.append(
        f"FALSE PASSES (builtin PASS, reference FAIL every time): {len(false_passes)}"
        if false_passes
        else "false passes: 0"
    )
    out += [f"  {key}" for key in false_passes]
    if summary["groups"]:
        out.append("")
        out.append(
            f"reproducible disagreements by first error (re-run alone up to {doc['reruns']}x):"
        )
        entries = {f"{e['script']} [{e['variant']}]": e for e in doc["entries"]}
        for group in summary["groups"]:
            out.append(f"  [{len(group['jobs'])}] {group['kind']}: {group['cause']}")
            out += [f"      {key}: {_both(entries[key])}" for key in group["jobs"]]
    reference = doc["reference"]
    if reference["kind"] == "recorded":
        here = doc["environment"].get("kernel_release")
        if reference.get("kernel_release") != here:
            out.append(
                f"note: the reference was recorded on kernel "
                f"{reference.get('kernel_release')}, this run is on {here}: a "
                f"kernel difference can change a verdict too"
            )
        if summary["reproducible"]:
            out.append(
                f"conformance regression: the builtin engine's verdict differs from the "
                f"one {reference.get('binary')} recorded on {reference.get('recorded')} "
                f"for the runs above (the binary is right until proven otherwise)"
            )
    crashed = [
        e for e in doc["entries"] if e["runs"].get("reference", {}).get("verdict") == "CRASH"
    ]
    if crashed:
        out.append("")
        out.append("the reference crashed (a signal or an internal assertion; not compared):")
        out += [
            f"  {e['script']} [{e['variant']}]: {e['runs']['reference']['first_error']}"
            for e in crashed
        ]
    flaky = [e for e in doc["entries"] if e.get("reproducible") is False]
    if flaky:
        out.append("")
        out.append("flakes (disagreed once, agreed when re-run alone):")
        out += [f"  {e['script']} [{e['variant']}]" for e in flaky]
    return "\n".join(out) + "\n"


def _both(entry: dict[str, Any]) -> str:
    """Both verdicts and first errors of one run, exactly as the engines printed them."""
    return " | ".join(
        f"{name} {run['verdict']}" + (f": {run['first_error']}" if run["first_error"] else "")
        for name, run in entry["runs"].items()
    )


def _reference(doc: dict[str, Any]) -> str:
    reference = doc["reference"]
    if reference["kind"] == "binary":
        return f"binary {reference['binary']}"
    if reference["kind"] == "recorded":
        return f"recorded runs in {reference['against']}"
    return "none (builtin engine only)"
