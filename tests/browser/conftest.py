"""Headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) and a real run folder.

Only a missing browser skips these tests; a missing Playwright is a broken test setup and errors.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.rating_run import pristine_run, run_dir
from tests.helpers.report_run import fx

__all__ = ["fx", "pristine_run", "run_dir"]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not Path(CHROMIUM).exists():
        reason = "chromium not installed (apt-get install -y chromium chromium-driver)"
        for item in items:
            if Path(str(item.fspath)).parent == Path(__file__).parent:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
async def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """A fresh profile per test; Playwright's own browsers are never downloaded. Playwright's driver
    and Chromium start with glibc's allocator at its defaults: `make test` raises its thresholds for
    the Python processes (Makefile `TEST_ENV`), and a browser is the user's, not ours to tune."""
    from playwright.async_api import async_playwright

    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)

    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as pw:
        context = await pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1366, "height": 768},
        )
        try:
            yield context
        finally:
            await context.close()
