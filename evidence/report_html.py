# SPDX-License-Identifier: GPL-2.0-only
"""pytest-html integration: a failed item's report row carries its evidence.

With ``--html=report.html`` (pytest-html), every failed item gets, besides pytest's failure
text (for a ``.pkt`` item: the script line, expected and actual packet), links to its pcaps
and counter snapshots and a time-sequence plot of each pcap with the script's expected
packets overlaid (:mod:`evidence.page`). Host runs find the evidence in the item's artifact
folder; ``pytest --kernel`` runs in the guest's folder for the test, which the replayed report
names in its ``artifacts`` user property. Without ``--html`` nothing is registered.
"""

from collections.abc import Generator
from pathlib import Path

import pytest

from evidence.page import evidence_html
from netns.pytest_plugin import artifact_dir

ARTIFACTS_PROPERTY = "artifacts"


class EvidenceExtras:
    """Adds the evidence to failed reports; `page_dir` is the report's folder (for links)."""

    def __init__(self, page_dir: Path) -> None:
        self.page_dir = page_dir

    def attach(self, report: pytest.TestReport, folder: Path) -> None:
        fragment = evidence_html(folder, report.longreprtext, self.page_dir)
        if fragment:
            from pytest_html import extras

            # pytest-html reads `report.extras`, an attribute TestReport keeps in its __dict__
            # like the **extra it is built with.
            report.__dict__["extras"] = [*getattr(report, "extras", []), extras.html(fragment)]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if report.failed:
            self.attach(report, artifact_dir(item))
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A report replayed from a guest (``--kernel``): evidence from the guest's folder."""
        guest = dict(report.user_properties).get(ARTIFACTS_PROPERTY)
        if report.failed and guest and not getattr(report, "extras", None):
            self.attach(report, Path(str(guest)))


def pytest_configure(config: pytest.Config) -> None:
    html_path = getattr(config.option, "htmlpath", None)
    if html_path:
        config.pluginmanager.register(
            EvidenceExtras(Path(html_path).resolve().parent), "netregress-evidence-extras"
        )
