"""The intelligibility task in headless Chromium: a rater plays each caller clip from the keyboard,
types what they heard, the transcripts are stored, and the stimulus-intelligibility gate evaluates
them in the real analysis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.playback import play_then_pause
from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.plan import load_plan
from voice_audit.analysis.rating.server import RatingServer
from voice_audit.analysis.rating.session import RatingSession
from voice_audit.analysis.rating.store import read_labels
from voice_audit.analysis.rating.tasks import build_task, rater_order
from voice_audit.harness.runlog import RunReader

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def progress_is(n: int, total: int) -> str:
    return f"() => document.getElementById('progress').textContent.includes('{n} of {total} rated')"


async def test_rater_types_transcripts_and_the_gate_evaluates(
    run_dir: Path, browser: Any, tmp_path: Path
) -> None:
    page = await browser.new_page()
    urls: list[str] = []
    errors: list[str] = []
    page.on("request", lambda req: urls.append(req.url))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    spec = build_task(run_dir, "intelligibility")
    server = RatingServer(RatingSession(run_dir, spec))
    await server.start("127.0.0.1", 0)
    assert server.url is not None
    reader = RunReader(run_dir)
    header = {r.header.episode_id: r.header for r in reader.records()}
    order = rater_order(spec, "t1")
    total = len(order)
    typed: dict[str, str] = {}
    plays: dict[str, int] = {}
    try:
        await page.goto(server.url + "?rater=t1")
        await page.wait_for_selector("#heard", state="visible")
        assert await page.is_hidden("#choices") and await page.is_hidden("#transcript")
        assert await page.evaluate("() => document.activeElement.id") == "heard"
        await page.keyboard.press("Enter")
        assert "Play the clip first" in str(await page.text_content("#message"))
        for n, item in enumerate(order):
            h = header[item.episode_id]
            words = str(item.reference).split()
            # The listener follows every caller except the Spanish-L1 one, of whom they catch every other word.
            heard = (
                " ".join(words[::2])
                if h.condition.accent == "l2_spanish" and "accent" in h.contrast
                else " ".join(words)
            )
            page_text = str(await page.content())
            assert str(item.reference) not in page_text and item.episode_id not in page_text
            plays[item.key] = await play_then_pause(page, "Escape")  # from inside the transcript box
            if n == 0:
                await page.keyboard.press("Enter")
                assert "Type the words you heard" in str(await page.text_content("#message"))
            await page.keyboard.type(heard)
            if n == 0:
                ARTIFACTS.mkdir(exist_ok=True)
                await page.screenshot(path=str(ARTIFACTS / "rating-intelligibility.png"), full_page=True)
            typed[item.key] = heard
            await page.keyboard.press("Enter")
            await page.wait_for_function(progress_is(n + 1, total))
            assert await page.input_value("#heard") == ""
        await page.wait_for_selector("#finished", state="visible")
    finally:
        await server.stop()
    base = server.url.split("?")[0]
    assert urls and all(u.startswith(base) or u.startswith("data:") for u in urls), urls
    assert errors == [], errors

    labels = read_labels(run_dir)
    assert [r.item for r in labels] == [i.key for i in order]
    assert all(r.task == "intelligibility" for r in labels)
    assert {r.item: r.plays for r in labels} == plays and min(plays.values()) >= 1
    assert {r.item: r.heard for r in labels} == typed
    assert all(r.reference == i.reference for r, i in zip(labels, order, strict=True))

    # One rater is enough under a pilot plan; the default plan asks for three and says so.
    default = analyze(run_dir, audio=False, write=False)
    res = next(r for r in default.gates.results if r.gate == "stimulus_intelligibility")
    assert res.verdict == "not-evaluable" and all(
        c["verdict"] == "not-evaluable" for c in res.details["conditions"].values()
    )
    base_plan = load_plan()
    pilot = base_plan.model_copy(
        update={
            "gates": base_plan.gates.model_copy(
                update={
                    "intelligibility": base_plan.gates.intelligibility.model_copy(
                        update={"min_raters": 1, "min_words": 10}
                    )
                }
            )
        }
    )
    result = analyze(run_dir, audio=False, write=False, plan=pilot)
    res = next(r for r in result.gates.results if r.gate == "stimulus_intelligibility")
    cells = {c["b"]: c for c in res.details["cells"].values()}
    (spanish,) = [k for k in cells if "accent=l2_spanish" in k]
    (frustrated,) = [k for k in cells if "affect=frustrated" in k]
    assert cells[spanish]["verdict"] == "fail" and cells[spanish]["gap"] < -0.15
    assert res.details["conditions"][spanish]["wer"] > 0.25
    assert cells[frustrated]["verdict"] == "pass" and cells[frustrated]["gap"] == 0.0
    assert res.verdict == "fail"
    by_pair = result.gates.by_pair["stimulus_intelligibility"]
    contrast = result.pairs.set_index("pair_id")["contrast"]
    assert set(by_pair[contrast[by_pair.index] == "accent"]) == {"fail"}
    assert set(by_pair[contrast[by_pair.index] == "affect"]) == {"pass"}
