"""Debian's chromium, headless, driven by Playwright: the browser every browser test launches.

A test opens it with ``with headless_chromium() as browser:``; where chromium or playwright is
missing the test skips with the reason, except under CI, which installs both (a skip there would
hide a broken set-up).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = os.environ.get("AGENTENVS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@contextmanager
def headless_chromium() -> Iterator[Any]:
    """A launched Playwright browser (closed on exit)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
    if shutil.which(CHROMIUM) is None and not os.path.isfile(CHROMIUM):
        missing = f"no chromium at {CHROMIUM}: install Debian's chromium (scripts/setup.sh does with apt-get)"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()
