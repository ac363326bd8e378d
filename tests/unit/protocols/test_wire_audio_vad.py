"""Codec units: event JSON round trips, call info, mu-law, resampling, the endpointer."""

from __future__ import annotations

import numpy as np
import pytest

from voice_audit.agents.fakes import tone
from voice_audit.agents.protocols import audio
from voice_audit.agents.protocols.event_json import (
    call_from_json,
    call_to_json,
    event_from_json,
    event_to_json,
)
from voice_audit.agents.serve.vad import Endpointer, VadConfig
from voice_audit.harness.adapter import (
    AgentError,
    AudioOut,
    CallInfo,
    ClearOut,
    ErrorOut,
    FactsSeenOut,
    HangupOut,
    HeardOut,
    MarkOut,
    StateOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
)
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary


def _call() -> CallInfo:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return CallInfo(facts=sc.facts, scenario_id=sc.id)


EVENTS = [
    AudioOut(b"\x01\x02\x03\x04", 16000),
    AudioOut(b"\xff" * 160, 8000, "mulaw"),
    TextOut("hello"),
    HeardOut("hi", 0.5),
    HeardOut("hi"),
    ToolCallOut("c1", "crm_lookup", {"account_id": "A1"}),
    ToolResultOut("c1", "crm_lookup", True, ("a", "b")),
    ToolResultOut("c2", "issue_refund", False, (), "not_eligible"),
    StateOut("greeting", "verify", ("x",)),
    FactsSeenOut("ab" * 32),
    MarkOut("m1"),
    ClearOut(),
    HangupOut("bye"),
    ErrorOut("agent_error", "boom", False),
    TurnEnd(12.5),
    TurnEnd(),
]


@pytest.mark.parametrize("ev", EVENTS, ids=lambda e: type(e).__name__)
def test_event_round_trip(ev: object) -> None:
    assert event_from_json(event_to_json(ev)) == ev  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        {"type": 3},
        {"type": "nope"},
        {"type": "audio", "audio": "!!notb64", "sample_rate": 16000},
        {"type": "audio", "sample_rate": 16000},
        {"type": "tool_call", "call_id": "x", "name": "y", "arguments": [1]},
        {"type": "audio", "audio": "", "sample_rate": 16000, "encoding": "opus"},
    ],
)
def test_malformed_events_have_a_kind(bad: object) -> None:
    with pytest.raises(AgentError) as info:
        event_from_json(bad)
    assert info.value.kind == "malformed_frame"


def test_unknown_error_kind_maps_to_agent_error() -> None:
    ev = event_from_json({"type": "error", "kind": "weird", "message": "m"})
    assert ev == ErrorOut("agent_error", "m", True)


def test_call_info_round_trip_keeps_the_facts_hash() -> None:
    call = _call()
    back = call_from_json(call_to_json(call))
    assert back == call and back.facts_sha256 == call.facts_sha256
    with pytest.raises(AgentError):
        call_from_json({"scenario_id": "x"})


def test_mulaw_round_trip_and_silence() -> None:
    pcm = tone(100, 8000)
    enc = audio.mulaw_encode(pcm)
    assert len(enc) == 800
    dec = np.frombuffer(audio.mulaw_decode(enc), "<i2").astype(float)
    ref = np.frombuffer(pcm, "<i2").astype(float)
    assert np.max(np.abs(dec - ref)) < 0.04 * 32768
    assert audio.mulaw_encode(b"\x00\x00" * 4) == bytes([audio.MULAW_SILENCE]) * 4


def test_resample_lengths() -> None:
    pcm = tone(400, 16000)
    assert len(audio.resample_pcm16(pcm, 16000, 8000)) == 3200 * 2
    assert len(audio.resample_pcm16(pcm, 16000, 24000)) == 9600 * 2
    assert audio.resample_pcm16(pcm, 16000, 16000) is pcm


def test_endpointer_finds_one_utterance_with_preroll_and_hangover() -> None:
    cfg = VadConfig(hangover_ms=300, preroll_ms=100, min_speech_ms=60)
    ep = Endpointer(8000, cfg)
    silence, speech = b"\x00\x00" * 4000, tone(600, 8000)  # 500 ms, 600 ms
    marks = ep.push(silence) + ep.push(speech) + ep.push(silence)
    assert [k for k, _ in marks] == ["start", "end"]
    ms = len(marks[1][1]) / 16
    assert 600 + 300 - 20 <= ms <= 600 + 100 + 300 + 20
    assert ep.flush() is None


def test_endpointer_flush_ends_a_running_utterance() -> None:
    ep = Endpointer(16000)
    assert [k for k, _ in ep.push(tone(200))] == ["start"]
    utt = ep.flush()
    assert utt is not None and len(utt) >= 2 * 16000 * 0.18
