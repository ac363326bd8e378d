"""The observer task ("what did the agent do in this turn?") over a real run folder."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import soundfile as sf

from voice_audit.analysis.gates.observer_evidence import read_observer_labels
from voice_audit.analysis.rating.clips import clip_wav
from voice_audit.analysis.rating.observer import ACTS, OTHER_FACT
from voice_audit.analysis.rating.session import LabelError, RatingSession
from voice_audit.analysis.rating.store import read_labels
from voice_audit.analysis.rating.tasks import build_task
from voice_audit.harness.runlog import RunReader
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary


def test_items_are_sampled_agent_turns_with_the_scenario_facts(pristine_run: Path) -> None:
    spec = build_task(pristine_run, "observer")
    reader = RunReader(pristine_run)
    _, scenario = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"]
    facts = tuple(c.fact for c in scenario.caller.challenges)
    assert facts[:2] == ("holder_name", "postcode")
    assert spec.audio == "agent" and spec.task == "observer"
    per_call: dict[str, list[int]] = {}
    for item in spec.items:
        per_call.setdefault(item.episode_id, []).append(item.turn or 0)
        assert item.options == ACTS and item.audio == "agent"
        assert item.facts == (*facts, OTHER_FACT)
        assert item.axis is None and item.intended is None
        spoken = {ev.turn: ev.text for ev in reader.events(item.episode_id) if ev.type == "agent_transcript"}
        assert item.text == spoken[item.turn]
    assert len(per_call) == 8 and all(1 <= len(t) <= 3 for t in per_call.values())
    # Seeded: the same sample again; another seed gives another sample somewhere.
    assert build_task(pristine_run, "observer").items == spec.items
    assert build_task(pristine_run, "observer", seed=12345).items != spec.items


def test_one_turn_clip_is_that_turn_of_the_agent_channel(pristine_run: Path) -> None:
    spec = build_task(pristine_run, "observer")
    item = spec.items[0]
    reader = RunReader(pristine_run)
    (ms,) = [
        ev.duration_ms
        for ev in reader.events(item.episode_id)
        if ev.type == "agent_speech_end" and ev.turn == item.turn
    ]
    one, rate = sf.read(io.BytesIO(clip_wav(reader, item.episode_id, "agent", turn=item.turn)))
    whole, _ = sf.read(io.BytesIO(clip_wav(reader, item.episode_id, "agent")))
    assert one.ndim == 1 and abs(len(one) / rate * 1000 - ms) <= 25
    assert len(one) < len(whole)
    with pytest.raises(ValueError, match="no agent speech"):
        clip_wav(reader, item.episode_id, "agent", turn=999)


async def test_labels_are_validated_and_stored_for_the_gate(run_dir: Path) -> None:
    session = RatingSession(run_dir, build_task(run_dir, "observer"))
    nxt = session.next_payload("ann")
    assert nxt["kind"] == "observer" and len(nxt["options"]) == len(ACTS)
    assert nxt["facts"][-1] == "Something else" and "transcript" in nxt
    assert not {"episode_id", "turn", "axis", "intended", "condition"} & set(nxt)
    for bad in [2, {"act": 0, "facts": []}, {"act": len(ACTS) + 1, "facts": []}, {"act": True, "facts": []},
                {"act": 1}, {"act": 1, "facts": [0]}, {"act": 1, "facts": [99]}, {"act": 1, "facts": "1"},
                {"act": 1, "facts": [], "x": 1}]:  # fmt: skip
        with pytest.raises(LabelError):
            await session.submit("ann", nxt["clip"], bad, 1)
    await session.submit("ann", nxt["clip"], {"act": 3, "facts": [2, 1, 2]}, 1)
    (rec,) = read_labels(run_dir)
    item = session.spec.items[[i.key for i in session.spec.items].index(rec.item)]
    assert rec.task == "observer" and rec.act == "challenge" and rec.facts == ("holder_name", "postcode")
    assert rec.turn == item.turn and rec.episode_id == item.episode_id and rec.audio == "agent"
    frame, skipped = read_observer_labels(run_dir)
    assert not skipped
    assert frame.to_dict("records") == [
        {
            "episode_id": item.episode_id,
            "turn": item.turn,
            "rater": "ann",
            "act": "challenge",
            "facts": "holder_name,postcode",
        }
    ]
