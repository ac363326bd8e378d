"""The fast run-folder reader: same table as the object path, every bad file still reported, and the
worker-process path gives the same result as the in-process one."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from voice_audit.analysis.metrics import readlogs
from voice_audit.analysis.metrics.ingest import ingest
from voice_audit.analysis.metrics.table import from_events
from voice_audit.harness.model.events import EVENT_TYPES, Event, parse_event

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


def _event(rng: random.Random, t: int, kind: str) -> Event:
    fields: dict[str, dict[str, Any]] = {
        "call_started": {"pacing": "realtime", "protocol": "p"},
        "facts_provisioned": {"sha256": "s", "tools": rng.choice([[], ["a", "b"]])},
        "caller_utterance_start": {
            "turn": 1,
            "kind": "anchor",
            "anchor_id": rng.choice([None, "a1"]),
            "text": "hi",
            "duration_ms": 5,
        },
        "caller_utterance_end": {"turn": 1, "truncated": rng.random() < 0.5},
        "caller_decision": {
            "turn": 2,
            "heard": "h",
            "classification": "denial",
            "action": "a",
            "reason": "r",
            "challenge_fact": rng.choice([None, "f"]),
        },
        "caller_reading": {
            "turn": 2,
            "reader": "model:m",
            "acting_reader": "rules",
            "classification": rng.choice([None, "offer"]),
            "acts": ["offer"],
            "challenge_fact": rng.choice([None, "f"]),
            "error": rng.choice([None, "e"]),
        },
        "asr_check": {"turn": 3, "text": "t", "confidence": rng.choice([None, 0.5])},
        "agent_speech_start": {"turn": 3},
        "agent_speech_end": {"turn": 3, "duration_ms": 7, "interrupted": True},
        "agent_audio": {"duration_ms": 2.5, "n_bytes": 3, "encoding": "pcm16", "sample_rate": 8000},
        "agent_transcript": {
            "turn": 3,
            "text": "t",
            "source": "harness_asr",
            "confidence": rng.choice([None, 0.1]),
        },
        "agent_heard": {"turn": 3, "text": "u"},
        "tool_call": {
            "call_id": "c",
            "name": "escalate_to_human",
            "arguments": rng.choice([{}, {"flags": ["a", 1, "b"]}, {"flags": "x"}]),
        },
        "tool_result": {
            "call_id": "c",
            "name": "n",
            "ok": rng.random() < 0.5,
            "result_keys": ["k"],
            "error": rng.choice([None, "e"]),
        },
        "state_transition": {"from_state": "a", "to_state": "b", "flags": rng.choice([[], ["f", "g"]])},
        "escalation_requested": {"turn": 1, "reason": "repairs"},
        "handoff": {"status": "refused", "source": "tool"},
        "barge_in": {"by": "agent"},
        "agent_clear": {"source": "twilio_clear", "dropped_ms": 40},
        "agent_yield": {"turn": 3, "stop_latency_ms": rng.choice([None, 120]), "overlap_ms": 120},
        "agent_silence": {"turn": 3, "silence_ms": 8000},
        "caller_patience": {
            "turn": 3,
            "action": "prompt",
            "silence_ms": 8000,
            "prompts": 1,
            "budget_ms": 45000,
            "reason": "r",
        },
        "non_service": {
            "reason": "agent_unresponsive",
            "kind": rng.choice([None, "disconnect"]),
            "message": "m",
        },
        "dtmf": {"digit": "5"},
        "mark": {"name": "m", "action": "echoed"},
        "error": {"kind": "disconnect", "message": "boom", "fatal": False},
        "hang_up": {"by": "harness", "reason": "r"},
        "usage": {"source": "llm", "model": rng.choice([None, "m"]), "quantities": {"input_tokens": 12}},
        "agent_signal": {"name": rng.choice(["turn_complete", "go_away"]), "detail": {"time_left_s": 2.0}},
        "rate_limited": {"source": "http_429", "retry_after_s": rng.choice([None, 2.0]), "message": "m"},
    }
    return parse_event({"t_ms": t, "type": kind, **fields[kind]})


def _reference(logs: dict[str, list[Event]]) -> pd.DataFrame:
    """The table as stacking one frame per event type gives it (the layout analysis was written for)."""
    frames = []
    for ep, events in enumerate(logs.values()):
        for seq, ev in enumerate(events):
            row: dict[str, Any] = {"ep": ep, "seq": seq, "t_ms": ev.t_ms, "type": ev.type}
            for name, value in ev.__dict__.items():
                row[name] = ",".join(value) if isinstance(value, tuple) else value
            frames.append(row)
    return pd.DataFrame(frames)


def _objects(values: pd.Series) -> list[object]:
    return [None if pd.isna(v) else v for v in values]


def test_table_matches_the_events_for_every_type() -> None:
    rng = random.Random(7)
    logs = {
        f"e{i}": [_event(rng, 10 * j, rng.choice(EVENT_TYPES)) for j in range(rng.randrange(0, 40))]
        for i in range(40)
    }
    got = from_events(logs).df
    ref = _reference(logs)
    assert len(got) == len(ref) > 500
    assert list(got["ep"]) == list(ref["ep"]) and list(got["seq"]) == list(ref["seq"])
    assert list(got["t_ms"]) == list(ref["t_ms"]) and list(got["type"]) == list(ref["type"])
    for col in (
        "text",
        "anchor_id",
        "challenge_fact",
        "error",
        "tools",
        "flags",
        "result_keys",
        "name",
        "status",
    ):
        assert _objects(got[col]) == _objects(ref[col]), col
    for col, src in (
        ("truncated", "truncated"),
        ("ok", "ok"),
        ("confidence", "confidence"),
        ("turn", "turn"),
    ):
        want_f = pd.to_numeric(ref[src].map(lambda v: float(v) if v is not None else float("nan")))
        pd.testing.assert_series_equal(got[col], want_f, check_names=False)
    calls = [ev for evs in logs.values() for ev in evs if ev.type == "tool_call"]
    want_flags = [
        "a,b" if getattr(ev, "arguments", {}).get("flags") == ["a", 1, "b"] else None for ev in calls
    ]
    have_flags = got.loc[got["type"] == "tool_call", "arg_flags"]
    assert _objects(have_flags) == want_flags and "a,b" in want_flags


@pytest.fixture
def run(tmp_path: Path) -> Path:
    dst = tmp_path / "golden"
    shutil.copytree(GOLDEN, dst)
    return dst


def _ids(run: Path) -> list[str]:
    return [json.loads(x)["header"]["episode_id"] for x in (run / "episodes.jsonl").read_text().splitlines()]


def test_two_events_on_one_line_are_invalid_even_with_a_matching_hash(run: Path) -> None:
    eid = _ids(run)[0]
    path = run / "episodes" / eid / "events.jsonl"
    lines = path.read_text().splitlines()
    data = ("\n".join([lines[0], lines[1] + "," + lines[2], *lines[3:]]) + "\n").encode()
    path.write_bytes(data)
    recs = [json.loads(x) for x in (run / "episodes.jsonl").read_text().splitlines()]
    recs[0]["outcome"]["events_sha256"] = hashlib.sha256(data).hexdigest()
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    ing = ingest(run)
    assert ing.counts() == {"events_invalid": 1}
    assert ":2: invalid event" in ing.problems[0].message
    assert list(ing.table.episodes) == _ids(run)[1:]


def test_blank_line_and_clock_going_back_are_reported(run: Path) -> None:
    a, b = _ids(run)[:2]
    pa_ = run / "episodes" / a / "events.jsonl"
    pa_.write_text(pa_.read_text().replace("\n", "\n\n", 1))
    pb = run / "episodes" / b / "events.jsonl"
    lines = [json.loads(x) for x in pb.read_text().splitlines()]
    assert lines[-2]["t_ms"] > 0
    lines[-1]["t_ms"] = 0
    pb.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ing = ingest(run)
    assert ing.counts() == {"events_invalid": 1, "events_hash_mismatch": 1, "clock_not_monotonic": 1}
    by_cat = {p.category: p for p in ing.problems}
    assert (
        by_cat["events_invalid"].episode_id == a and ":2: invalid event" in by_cat["events_invalid"].message
    )
    assert f"event {len(lines)} goes back in time" in by_cat["clock_not_monotonic"].message
    row = ing.episodes.loc[b]
    assert row["analysable"] and row["events_hash_ok"] == 0.0 and row["events_monotonic"] == 0.0
    assert not ing.episodes.loc[a, "analysable"] and a not in set(ing.table.episodes)


def test_worker_processes_give_the_same_result(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _ids(run)
    (run / "episodes" / ids[0] / "events.jsonl").unlink()
    p = run / "episodes" / ids[1] / "events.jsonl"
    p.write_text(p.read_text().replace("Thank you for calling", "Thanks for calling"))
    inline = ingest(run, workers=1)
    monkeypatch.setattr(readlogs, "PARALLEL_MIN", 0)
    pooled = ingest(run, workers=2)
    assert [x.model_dump() for x in pooled.problems] == [x.model_dump() for x in inline.problems]
    assert inline.counts() == {"events_missing": 1, "events_hash_mismatch": 1}
    pd.testing.assert_frame_equal(pooled.episodes, inline.episodes)
    pd.testing.assert_frame_equal(pooled.table.df, inline.table.df)
    assert list(pooled.table.episodes) == list(inline.table.episodes) == ids[1:]
