# SPDX-License-Identifier: GPL-2.0-only
"""Conformance harness: does the builtin engine give a real packetdrill binary's verdict?

``scripts/conformance`` runs a corpus of ``.pkt`` scripts under both engines (or the builtin
one against a saved reference JSON), each in its own fresh network namespace, and reports
where the verdicts differ. One module per step:

    corpus (scripts, variants, arguments) → runner (parallel runs, re-runs alone, progress)
      → compare (agreement, false passes, groups, stale references) → report (tables)
    environment (what decides verdicts), record (the JSON), guest (--kernel), build
    (a reference binary from a source tree), cli (the command line)
"""
