# SPDX-License-Identifier: GPL-2.0-only
"""Fixtures of the library's own tests: a headless Chromium for the HTML reports' browser
tests (matrix.html, report.html), or a skip that says what to install."""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMEDRIVER = "/usr/bin/chromedriver"


def _chromium_missing() -> str | None:
    if shutil.which("chromium") is None or not Path(CHROMEDRIVER).exists():
        return "needs Debian's chromium and chromium-driver: run scripts/setup --browser"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs selenium in the virtualenv: run scripts/setup"
    return None


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Any]:
    """A Selenium driver of headless Chromium, 1200x1600, with a profile of its own."""
    missing = _chromium_missing()
    if missing:
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1200,1600",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
