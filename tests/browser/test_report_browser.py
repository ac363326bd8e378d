"""The report in headless Chromium from file://: no errors, no network, audio plays, pair viewer opens."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from analysis.report import build_report, write_report

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FIXTURE = Path(__file__).resolve().parents[1] / "unit" / "report" / "_fixture.py"


def fixture_module() -> ModuleType:
    name = "voice_audit_report_fixture"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURE)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


async def test_report_opens_plays_and_shows_a_pair(browser: Any, tmp_path: Path) -> None:
    fx = fixture_module()
    built = build_report(fx.analysed_run(), environ=fx.ENVIRON)
    write_report(built, tmp_path / "report")
    index = tmp_path / "report" / "index.html"
    pair = built.report.pairs_shown[0]
    assert pair.parity_violation == 1.0

    page = await browser.new_page()
    urls: list[str] = []
    errors: list[str] = []
    page.on("request", lambda req: urls.append(req.url))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(index.as_uri())
    await page.wait_for_selector("#gates table")
    assert await page.locator(f"#pair-{pair.pair_id}").is_hidden()

    await page.click(f'a.open-pair[href="#pair-{pair.pair_id}"]')
    viewer = page.locator(f"#pair-{pair.pair_id}")
    await viewer.wait_for(state="visible")
    assert await page.locator("section.pair:visible").count() == 1
    assert await viewer.locator(".call audio").count() == 2
    assert "Tool-call parity violation" in str(await viewer.text_content())
    assert await viewer.locator(".side-b .lane-tool .seg.k-fail").count() == 1

    seg = viewer.locator(".side-b .lane-caller .seg").nth(1)
    start_s = int(str(await seg.get_attribute("data-t"))) / 1000
    await seg.click()
    await page.wait_for_function(
        f"() => {{ const a = document.querySelector('#pair-{pair.pair_id} .side-b audio');"
        f" return !a.paused && a.currentTime > {start_s} + 0.5; }}",
        timeout=10_000,
    )
    left = await viewer.locator(".side-b .playhead").evaluate("el => el.style.left")
    assert left.startswith("calc(")
    await viewer.locator(".side-b audio").evaluate("a => a.pause()")

    ARTIFACTS.mkdir(exist_ok=True)
    await viewer.scroll_into_view_if_needed()
    await page.screenshot(path=str(ARTIFACTS / "report-pair.png"))
    await page.goto(index.as_uri() + "#summary")
    await page.screenshot(path=str(ARTIFACTS / "report-front.png"), full_page=False)

    assert not errors, errors
    outside = [u for u in urls if not u.startswith("file://")]
    assert not outside, outside
    assert any(u.endswith(".wav") for u in urls)
