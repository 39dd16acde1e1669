"""pytest-html integration: a failed item's report row carries its evidence.

With ``--html=report.html`` (pytest-html), every failed item gets, besides pytest's failure
text (for a ``.pkt`` item: the script line, expected and actual packet), links to its pcaps
and counter snapshots and a time-sequence plot of each pcap with the script's expected
packets overlaid (:mod:`netns.evidence`). Without ``--html`` this plugin does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .evidence import evidence_html
from .pytest_plugin import artifact_dir


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    report: pytest.TestReport = yield
    html_path = getattr(item.config.option, "htmlpath", None)
    if not html_path or not report.failed:
        return report
    fragment = evidence_html(artifact_dir(item), report.longreprtext,
                             Path(html_path).resolve().parent)
    if fragment:
        from pytest_html import extras

        report.extras = [*getattr(report, "extras", []), extras.html(fragment)]
    return report
