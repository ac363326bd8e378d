"""Headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) and a real run folder.

Only a missing browser skips these tests; a missing Playwright is a broken test setup and errors.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

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
CAMPAIGN = """\
name: matched_audit_7
seed: 11
scenarios: [refund_duplicate_charge]
agents: [{name: scripted_ref, adapter: "agents.testing:scripted"}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
  - contrast: [affect]
    base: {voice_profile: male_adult, accent: gb_southern, disfluency: none, wording: plain}
    a: {affect: calm}
    b: {affect: frustrated}
voices: 2
concurrency: 4
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not Path(CHROMIUM).exists():
        reason = "chromium not installed (apt-get install -y chromium chromium-driver)"
        for item in items:
            if Path(str(item.fspath)).parent == Path(__file__).parent:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def pristine_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("browser-run")
    (parent / "c.yaml").write_text(CAMPAIGN)
    exe = Path(sys.executable).with_name("voice-audit")
    subprocess.run(
        [str(exe), "run", str(parent / "c.yaml"), "--out", str(parent), "--run-id", "rate-run", "--quiet", "--no-stimulus-check"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return parent / "rate-run"


@pytest.fixture
def run_dir(pristine_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine_run, tmp_path / "run"))


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Any]:
    """A fresh profile per test; Playwright's own browsers are never downloaded."""
    from playwright.async_api import async_playwright

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
