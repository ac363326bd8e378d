"""The report in headless Chromium from file://: the answer on the first screen, sections that open by
keyboard, a short page before expansion, no errors, no network, audio plays, pair viewer opens."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from tests.helpers.playback import PLAY_TIMEOUT_MS
from voice_audit.analysis.report import build_report, write_report

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


async def test_report_opens_plays_and_shows_a_pair(browser: Any, fx: ModuleType, tmp_path: Path) -> None:
    built = build_report(fx.analysed_run(), environ=fx.ENVIRON)
    write_report(built, tmp_path / "report")
    index = tmp_path / "report" / "index.html"
    pair = next(
        p
        for p in built.report.pairs_shown
        if p.parity_violation == 1.0
        and p.b
        and any(i.lane == "tool" and i.kind == "fail" for i in p.b.timeline)
    )

    page = await browser.new_page()
    urls: list[str] = []
    errors: list[str] = []
    page.on("request", lambda req: urls.append(req.url))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(index.as_uri())
    await page.wait_for_selector("#findings ol.findings")
    assert await page.locator(f"#pair-{pair.pair_id}").is_hidden()
    assert not any(u.endswith(".wav") for u in urls)  # recordings load only when a pair is opened

    await page.click("#pairs > summary")
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
        timeout=PLAY_TIMEOUT_MS,
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


async def test_report_leads_with_the_findings_and_opens_by_keyboard(
    browser: Any, fx: ModuleType, tmp_path: Path
) -> None:
    built = build_report(fx.analysed_run(), environ=fx.ENVIRON)
    write_report(built, tmp_path / "report")
    index = tmp_path / "report" / "index.html"
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(index.as_uri())
    await page.wait_for_selector("#findings ol.findings li")
    viewport = page.viewport_size
    assert viewport is not None
    for selector in ("ol.findings li", "table.matrix tbody tr"):
        box = await page.locator(selector).first.bounding_box()
        assert box is not None and box["y"] + box["height"] <= viewport["height"], selector
    assert await page.locator("ol.findings li").count() == len(built.report.findings.ranked)
    assert await page.locator("table.matrix tbody tr").count() == len(built.report.findings.matrix)
    height = await page.evaluate("document.documentElement.scrollHeight")
    assert height < 10_000, height
    assert await page.locator("details.block[open]").count() == 0

    gates = page.locator("#gates")
    assert not await page.locator("#gates table.gates").is_visible()
    await page.focus("#gates > summary")
    await page.keyboard.press("Enter")
    await page.locator("#gates table.gates").wait_for(state="visible")
    assert await gates.evaluate("d => d.open")
    await page.focus("#deltas > summary")
    await page.keyboard.press(" ")
    first_cell = page.locator("#deltas details.cell").first
    await first_cell.wait_for(state="visible")
    await first_cell.locator("summary").focus()
    await page.keyboard.press("Enter")
    await first_cell.locator("table.deltas").first.wait_for(state="visible")
    taller = await page.evaluate("document.documentElement.scrollHeight")
    assert taller > height

    await page.goto(index.as_uri() + f"#cell-{built.report.cells[-1].index}")
    await page.locator(f"#cell-{built.report.cells[-1].index} table.deltas").first.wait_for(state="visible")

    ARTIFACTS.mkdir(exist_ok=True)
    await page.goto(index.as_uri())
    await page.screenshot(path=str(ARTIFACTS / "report-findings.png"), full_page=False)
    await page.emulate_media(media="print")
    assert await page.locator("nav").is_hidden()
    assert not errors, errors


async def test_redacted_report_shows_no_condition_label(browser: Any, fx: ModuleType, tmp_path: Path) -> None:
    built = build_report(fx.analysed_run(), environ=fx.ENVIRON, redact=True)
    write_report(built, tmp_path / "report")
    page = await browser.new_page()
    await page.goto((tmp_path / "report" / "index.html").as_uri())
    await page.wait_for_selector("#findings ol.findings li")
    await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    text = str(await page.evaluate("document.body.innerText"))
    titles = str(await page.evaluate("[...document.querySelectorAll('[title]')].map(e => e.title).join(' ')"))
    for label in ("us_general", "l2_spanish", "female_adult", "accent=us", "accent=l2"):
        assert label not in text and label not in titles, label
    assert "accent=[redacted]" in text and "condition b" in text
