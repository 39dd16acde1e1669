# SPDX-License-Identifier: GPL-2.0-only
"""pytest-html integration: a failed item's report row carries its evidence, and the
environment table says how the packetdrill scripts were run and judged.

With ``--html=report.html`` (pytest-html), every failed item gets, besides pytest's failure
text (for a ``.pkt`` item: the script line, expected and actual packet), links to its pcaps
and counter snapshots and a time-sequence plot of each pcap with the script's expected
packets overlaid (:mod:`evidence.page`), above the failure text. Host runs find the evidence in
the item's artifact folder; ``pytest --kernel`` runs in the guest's folder for the test, which
the replayed report names in its ``artifacts`` user property. Without ``--html`` nothing is
registered.

The page opens on what needs a person: pytest-html sorts errors and failures first, and the
project's configuration (``render_collapsed`` in pyproject.toml) folds the expected failures,
every broken variant proving its oracle, next to the passes. The environment table (pytest-
metadata's, which pytest-html shows) has what the other plugins answer to
:class:`netregress.session.EnvironmentHooks` (the packetdrill plugin: its engine and version,
the timing tolerance, and at the end the late-side slack the scripts actually ran with), and
``KSFT_MACHINE_SLOW`` when the run has it: a timing verdict means nothing without them.
"""

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from evidence.page import evidence_html
from netregress.session import (
    ARTIFACTS_PROPERTY,
    KERNEL_UNDER_TEST,
    EnvironmentHooks,
    artifact_dir,
)

MACHINE_SLOW = "KSFT_MACHINE_SLOW"  # kselftest's "timing cannot be judged here"


class EvidenceExtras:
    """Adds the evidence to failed reports; `page_dir` is the report's folder (for links)."""

    def __init__(
        self, config: pytest.Config, page_dir: Path, environment: dict[str, object]
    ) -> None:
        self.config = config
        self.page_dir = page_dir
        self.environment = environment  # pytest-metadata's table, which pytest-html shows
        self.reports: list[pytest.TestReport] = []

    def pytest_html_report_title(self, report: Any) -> None:
        """The page's title names the kernel it judged (the file's name said nothing)."""
        kernel = self.config.stash.get(KERNEL_UNDER_TEST, None)
        if kernel is not None:
            report.title = f"netregress on {kernel.words()}"

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
        folder = artifact_dir(item)
        if report.failed and folder is not None:
            self.attach(report, folder)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A report replayed from a guest (``--kernel``): evidence from the guest's folder.
        Every report: the timing record it carries (from an xdist worker or a guest too)."""
        self.reports.append(report)
        guest = dict(report.user_properties).get(ARTIFACTS_PROPERTY)
        if report.failed and guest and not getattr(report, "extras", None):
            self.attach(report, Path(str(guest)))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        """Before pytest-html writes the page (its hook runs last): what only the reports tell
        is known now. pytest-html shows the table it was handed at the session's start, this
        same dict."""
        hook = self.config.hook.pytest_netregress_environment_at_end
        for rows in hook(config=self.config, reports=self.reports):
            self.environment.update(rows)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(EnvironmentHooks)


@pytest.hookimpl(trylast=True)  # after pytest-metadata made its table, the others their setup
def pytest_configure(config: pytest.Config) -> None:
    html_path = getattr(config.option, "htmlpath", None)
    if not html_path:
        return
    from pytest_metadata.plugin import metadata_key

    table: dict[str, object] = config.stash[metadata_key]
    for rows in config.hook.pytest_netregress_environment(config=config):
        table.update(rows)
    if MACHINE_SLOW in os.environ:
        table[MACHINE_SLOW] = os.environ[MACHINE_SLOW]
    config.pluginmanager.register(
        EvidenceExtras(config, Path(html_path).resolve().parent, table),
        "netregress-evidence-extras",
    )
