"""The rating app in headless Chromium, keyboard only: play, label, reload, resume, screenshot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.playback import PLAY_TIMEOUT_MS, PLAYING, play_then_pause
from voice_audit.analysis.rating.server import RatingServer
from voice_audit.analysis.rating.session import RatingSession
from voice_audit.analysis.rating.store import read_labels
from voice_audit.analysis.rating.tasks import TaskKind, build_task, rater_order

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


async def serve(run_dir: Path, task: TaskKind) -> RatingServer:
    server = RatingServer(RatingSession(run_dir, build_task(run_dir, task)))
    await server.start("127.0.0.1", 0)
    return server


@pytest.fixture
async def page_log(browser: Any) -> AsyncIterator[tuple[Any, list[str], list[str]]]:
    """A page that records every URL it requests and every console error or page error."""
    page = await browser.new_page()
    urls: list[str] = []
    errors: list[str] = []
    page.on("request", lambda req: urls.append(req.url))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page, urls, errors


async def progress(page: Any) -> str:
    return str(await page.text_content("#progress"))


async def test_perceptibility_keyboard_label_reload_resume(run_dir: Path, page_log: Any) -> None:
    page, urls, errors = page_log
    server = await serve(run_dir, "perceptibility")
    assert server.url is not None
    try:
        await page.goto(server.url)
        await page.wait_for_selector("#rater-input", state="visible")
        await page.keyboard.type("tester1")
        await page.keyboard.press("Enter")
        await page.wait_for_url("**?rater=tester1")
        await page.wait_for_selector("#rate", state="visible")
        await page.wait_for_function("() => document.querySelectorAll('#choices .choice').length === 2")
        assert "0 of 8 rated" in await progress(page)

        await page.keyboard.press("Enter")
        assert "Play the clip first" in str(await page.text_content("#message"))

        plays: list[int] = []
        for n, key in enumerate(["1", "2", "1"]):
            plays.append(await play_then_pause(page, "Space"))
            await page.keyboard.press(key)
            pressed = await page.eval_on_selector_all(
                "#choices .choice", "bs => bs.map(b => b.getAttribute('aria-pressed'))"
            )
            assert pressed[int(key) - 1] == "true" and pressed.count("true") == 1
            await page.keyboard.press("Enter")
            await page.wait_for_function(
                f"() => document.getElementById('progress').textContent.includes('{n + 1} of 8')"
            )

        labels = read_labels(run_dir)
        assert [r.rater for r in labels] == ["tester1"] * 3 and [r.position for r in labels] == [0, 1, 2]
        assert [r.perceived == r.options[int(k) - 1] for r, k in zip(labels, "121", strict=True)] == [
            True
        ] * 3
        assert [r.plays for r in labels] == plays and min(plays) >= 1

        await page.reload()
        await page.wait_for_selector("#rate", state="visible")
        await page.wait_for_function(
            "() => document.getElementById('progress').textContent.includes('3 of 8')"
        )
        order = rater_order(server.session.spec, "tester1")
        src = await page.get_attribute("#audio", "src")
        assert src == "clip/" + server.session.clips.token_for(order[3].key)
        await page.keyboard.press("Space")
        await page.wait_for_function(PLAYING, timeout=PLAY_TIMEOUT_MS)
        await page.keyboard.press("2")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "rating-perceptibility.png"), full_page=True)
    finally:
        await server.stop()
    base = server.url.split("?")[0]
    assert urls and all(u.startswith(base) or u.startswith("data:") for u in urls), urls
    assert errors == [], errors


async def test_quality_scales_by_keyboard(run_dir: Path, page_log: Any) -> None:
    page, urls, errors = page_log
    server = await serve(run_dir, "quality")
    assert server.url is not None
    try:
        await page.goto(server.url + "?rater=q1")
        await page.wait_for_function("() => document.querySelectorAll('#choices .scale').length === 6")
        await page.keyboard.press("Space")
        await page.wait_for_function(PLAYING, timeout=PLAY_TIMEOUT_MS)
        for key in "43511":
            await page.keyboard.press(key)
        await page.keyboard.press("Enter")
        assert "every scale" in str(await page.text_content("#message"))
        await page.keyboard.press("4")  # empathy, the one scale still open
        await page.keyboard.press("ArrowUp")  # back to interruption
        await page.keyboard.press("2")
        current = await page.get_attribute(".scale.current", "data-index")
        assert current is not None
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "rating-quality.png"), full_page=True)
        await page.keyboard.press("Enter")
        await page.wait_for_function(
            "() => document.getElementById('progress').textContent.includes('1 of 8')"
        )
        (label,) = read_labels(run_dir)
        assert label.scores == {
            "helpfulness": 4,
            "specificity": 3,
            "policy_grounding": 5,
            "condescension": 1,
            "interruption": 2,
            "empathy": 4,
        }
        await page.reload()
        await page.wait_for_function(
            "() => document.getElementById('progress').textContent.includes('1 of 8')"
        )
    finally:
        await server.stop()
    base = server.url.split("?")[0]
    assert urls and all(u.startswith(base) or u.startswith("data:") for u in urls), urls
    assert errors == [], errors


async def test_observer_act_and_facts_by_keyboard_and_mouse(run_dir: Path, page_log: Any) -> None:
    page, urls, errors = page_log
    server = await serve(run_dir, "observer")
    spec = server.session.spec
    assert server.url is not None
    try:
        await page.goto(server.url + "?rater=o1")
        await page.wait_for_function("() => document.querySelectorAll('#choices .choice').length === 11")
        assert not await page.is_hidden("#transcript") and not await page.is_hidden("#facts-box")
        first = rater_order(spec, "o1")[0]
        assert str(first.text) in str(await page.text_content("#transcript"))
        n_facts = await page.eval_on_selector_all("#facts .choice", "bs => bs.length")
        assert n_facts == len(first.facts)
        await page.keyboard.press("Space")
        await page.wait_for_function(PLAYING, timeout=PLAY_TIMEOUT_MS)
        await page.keyboard.press("0")  # the tenth act: question
        await page.keyboard.press("3")  # changed mind: challenge
        await page.click("#facts .choice >> nth=1")
        await page.click("#facts .choice >> nth=0")
        await page.click("#facts .choice >> nth=1")  # toggled off again
        pressed = await page.eval_on_selector_all(
            "#choices .choice", "bs => bs.map(b => b.getAttribute('aria-pressed'))"
        )
        assert pressed.index("true") == 2 and pressed.count("true") == 1
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "rating-observer.png"), full_page=True)
        await page.keyboard.press("Enter")
        await page.wait_for_function(
            f"() => document.getElementById('progress').textContent.includes('1 of {len(spec.items)}')"
        )
        (label,) = read_labels(run_dir)
        assert label.task == "observer" and label.item == first.key and label.turn == first.turn
        assert label.act == "challenge" and label.facts == (first.facts[0],)
    finally:
        await server.stop()
    base = server.url.split("?")[0]
    assert urls and all(u.startswith(base) or u.startswith("data:") for u in urls), urls
    assert errors == [], errors
