"""The wire codecs on their own: Twilio message parsing, Realtime names, spacing and cancel reasons."""

from __future__ import annotations

import json

import pytest

from voice_audit.agents.protocols import realtime_wire as rw
from voice_audit.agents.protocols import twilio_wire as tw
from voice_audit.agents.protocols.event_json import b64encode
from voice_audit.harness.adapter import AgentError


def test_twilio_messages_parse_into_their_types() -> None:
    start = tw.start(1, "MZ1", "AC1", "CA1", {"from_number": "+1555"})
    assert tw.parse(json.dumps(start)) == tw.Start("MZ1", "CA1", "AC1", {"from_number": "+1555"})
    assert tw.parse(tw.media_in(2, "MZ1", 1, 0, b"\xff" * 160)) == tw.Media(b"\xff" * 160)
    assert tw.parse(json.dumps(tw.dtmf(3, "MZ1", "5"))) == tw.Dtmf("5")
    assert tw.parse(json.dumps(tw.mark("MZ1", "m", 4))) == tw.Mark("m")
    assert tw.parse(json.dumps(tw.stop(5, "MZ1", "AC1", "CA1"))) == tw.Stop()
    assert tw.parse(json.dumps(tw.clear("MZ1"))) == tw.Clear()
    assert tw.parse(json.dumps(tw.connected())) == tw.Connected()
    assert tw.parse('{"event":"unknown_later_event"}') == tw.Other("unknown_later_event")
    assert json.loads(tw.media_in(2, "MZ1", 1, 20, b"\x00")) == {
        "event": "media",
        "sequenceNumber": "2",
        "streamSid": "MZ1",
        "media": {"track": "inbound", "chunk": "1", "timestamp": "20", "payload": b64encode(b"\x00")},
    }


@pytest.mark.parametrize(
    "raw",
    [
        b"\x00\x01",
        "not json",
        "[1, 2]",
        '{"event":"media","media":{"payload":"***"}}',
        '{"event":"media","media":"x"}',
        '{"event":"mark","mark":{"name":3}}',
        '{"event":"dtmf","dtmf":{}}',
        '{"event":"start","start":{"customParameters":[1]}}',
    ],
)
def test_twilio_bad_messages_are_malformed_frames(raw: str | bytes) -> None:
    with pytest.raises(AgentError) as info:
        tw.parse(raw)
    assert info.value.kind == "malformed_frame"


def test_realtime_names_and_transcript_spacing() -> None:
    assert rw.to_ga("response.audio.delta") == "response.output_audio.delta"
    assert rw.on_wire("response.output_audio_transcript.done", beta=True) == "response.audio_transcript.done"
    assert rw.on_wire("response.done", beta=True) == "response.done"
    parts = ["Let me check.", "I found it.", " Done.", "\nNext"]
    joined = ""
    for p in parts:
        joined += rw.join_transcript(joined, p)
    assert joined == "Let me check. I found it. Done.\nNext"
    assert rw.join_transcript("", "Hi") == "Hi"


def test_realtime_cancel_reasons_and_items() -> None:
    wire = rw.ServerWire()
    assert wire.response("r", "cancelled", [], "client_cancelled")["status_details"] == {
        "type": "cancelled",
        "reason": "client_cancelled",
    }
    assert wire.response("r", "completed", [])["status_details"] is None
    assert rw.assistant_item("i", "completed", "hi", beta=False)["content"] == [
        {"type": "output_audio", "transcript": "hi"}
    ]
    assert rw.assistant_item("i", "completed", "hi", beta=True)["content"] == [
        {"type": "audio", "transcript": "hi"}
    ]
    assert rw.format_from_session({"type": "audio/pcmu"}) == rw.MULAW
    with pytest.raises(AgentError):
        rw.format_from_session("opus")
