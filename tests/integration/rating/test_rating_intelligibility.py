"""The intelligibility task ("type what the caller says") over a real run folder: items, blinding,
validation and storage."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import soundfile as sf

from voice_audit.analysis.gates.intelligibility import read_intelligibility_labels
from voice_audit.analysis.rating.clips import clip_wav
from voice_audit.analysis.rating.intelligibility import LINES_PER_VOICE, MIN_WORDS, caller_turns
from voice_audit.analysis.rating.session import LabelError, RatingSession
from voice_audit.analysis.rating.store import read_labels
from voice_audit.analysis.rating.tasks import build_task, rater_order
from voice_audit.harness.runlog import RunReader


def test_items_are_each_voices_distinct_caller_lines(pristine_run: Path) -> None:
    spec = build_task(pristine_run, "intelligibility")
    reader = RunReader(pristine_run)
    assert spec.task == "intelligibility" and spec.audio == "caller" and spec.items
    per_voice: dict[str, list[str]] = {}
    for item in spec.items:
        assert item.audio == "caller" and item.turn is not None and item.reference
        assert item.axis is None and item.intended is None and item.options == ()
        assert caller_turns(reader, item.episode_id)[item.turn] == item.reference
        assert len(item.reference.split()) >= MIN_WORDS
        rec = next(r for r in reader.records() if r.header.episode_id == item.episode_id)
        cond = json.dumps(rec.header.condition.model_dump(mode="json"), sort_keys=True)
        per_voice.setdefault(f"{cond}#{rec.header.voice_index}", []).append(item.reference)
    # 2 contrasts x 2 conditions x 2 voices, every voice heard, no line twice for one voice
    assert len(per_voice) == 8
    assert all(1 <= len(v) <= LINES_PER_VOICE and len(set(v)) == len(v) for v in per_voice.values())
    assert build_task(pristine_run, "intelligibility").items == spec.items


def test_clip_is_the_callers_turn(pristine_run: Path) -> None:
    spec = build_task(pristine_run, "intelligibility")
    item = spec.items[0]
    reader = RunReader(pristine_run)
    ms = sum(
        ev.duration_ms
        for ev in reader.events(item.episode_id)
        if ev.type == "caller_utterance_start" and ev.turn == item.turn
    )
    one, rate = sf.read(io.BytesIO(clip_wav(reader, item.episode_id, "caller", turn=item.turn)))
    assert one.ndim == 1 and abs(len(one) / rate * 1000 - ms) <= 400


async def test_transcripts_are_validated_blind_and_stored(run_dir: Path) -> None:
    session = RatingSession(run_dir, build_task(run_dir, "intelligibility"))
    nxt = session.next_payload("tina")
    first = rater_order(session.spec, "tina")[0]
    page_text = json.dumps(nxt)
    assert nxt["kind"] == "intelligibility" and "Type the words" in nxt["question"]
    assert set(nxt) == {"done", "completed", "total", "clip", "kind", "audio_hint", "question"}
    assert first.reference is not None and first.reference not in page_text
    assert first.episode_id not in page_text
    for bad in [3, None, {"text": "x"}, ["a"], "x" * 1001]:
        with pytest.raises(LabelError):
            await session.submit("tina", nxt["clip"], bad, 1)
    await session.submit("tina", nxt["clip"], "  I was   charged\ntwice ", 2)
    (rec,) = read_labels(run_dir)
    assert rec.task == "intelligibility" and rec.heard == "I was charged twice"
    assert rec.reference == first.reference and rec.turn == first.turn and rec.episode_id == first.episode_id
    nxt2 = session.next_payload("tina")
    await session.submit("tina", nxt2["clip"], "", 1)  # nothing understood is an answer
    frame, skipped = read_intelligibility_labels(run_dir)
    assert not skipped and list(frame["heard"]) == ["I was charged twice", ""]
    assert (run_dir / "ratings" / "items-intelligibility.json").is_file()
