"""A WebRTC session's reading of RTVI: events in our terms, and exposure from what the bot sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from voice_audit.agents.protocols import webrtc_wire as ww
from voice_audit.agents.protocols.webrtc import WebRtcAdapter, WebRtcSession
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    ClearOut,
    HangupOut,
    HeardOut,
    SignalOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
)
from voice_audit.harness.model.campaign import AgentSpec


def _session(**options: Any) -> WebRtcSession:
    adapter = WebRtcAdapter(
        AgentSpec(name="bot", adapter="webrtc", url="http://127.0.0.1:7860", options=options)
    )
    return WebRtcSession(adapter, pc=None, mic=None, dc=None, pc_id="pc-1")


async def _feed(session: WebRtcSession, msgs: list[ww.RtviEvent]) -> list[AgentEvent]:
    for m in msgs:
        await session._on_rtvi(m)
    session._chan.finish("test over")
    return [ev async for ev in session.events()]


def test_bot_words_come_from_one_message_type_and_expose_transcripts() -> None:
    s = _session()
    assert not s.capabilities.transcripts and not s.capabilities.tool_trace  # nothing sent yet: not exposed
    msgs: list[ww.RtviEvent] = [
        ww.BotText("Hello there.", 1, "output"),
        ww.BotText("Hello there.", None, "tts"),  # the same words again, under another type
        ww.UserHeard("hi", "input"),
        ww.UserHeard("hi", "transcription"),
        ww.BotText("  ", 2, "output"),
        ww.BotSpeaking(True),
        ww.BotInterrupted(),
    ]
    events = asyncio.run(_feed(s, msgs))
    assert events == [
        TextOut("Hello there."),
        HeardOut("hi"),
        SignalOut("bot_started_speaking", {"source": "rtvi"}),
        ClearOut(source="bot_interrupted"),
    ]
    assert s.capabilities.transcripts and not s.capabilities.tool_trace
    assert s.capabilities.protocol == "webrtc"


def test_named_tool_calls_expose_a_tool_trace_and_unnamed_ones_withdraw_it() -> None:
    s = _session()
    named: list[ww.RtviEvent] = [
        ww.ToolStarted("c1", "issue_refund", {"amount": "24.99"}),
        ww.ToolStopped("c1", None, False, {"ok": True, "result": {"refund_id": "R1"}}, True),
        ww.ToolStarted("c2", "verify_identity", None),
        ww.ToolStopped("c2", "verify_identity", False, {"ok": False, "error": "mismatch"}, True),
    ]
    events = asyncio.run(_feed(s, named))
    assert events == [
        ToolCallOut("c1", "issue_refund", {"amount": "24.99"}),
        ToolResultOut("c1", "issue_refund", True, ("refund_id",), None),
        ToolCallOut("c2", "verify_identity", {}),
        ToolResultOut("c2", "verify_identity", False, (), "mismatch"),
    ]
    assert s.capabilities.tool_trace
    s2 = _session(tool_trace=True)
    assert s2.capabilities.tool_trace  # declared: a call without tool calls counts as none, not missing
    events = asyncio.run(_feed(s2, [ww.ToolStarted("c3", None, None), ww.ToolStopped("c3", None, False)]))
    assert events == []  # a call reported without its name cannot be audited...
    assert not s2.capabilities.tool_trace  # ...so this call has no tool trace, whatever was declared


def test_peer_left_is_the_bot_hanging_up_and_ends_the_session() -> None:
    async def main() -> tuple[list[AgentEvent], WebRtcSession]:
        s = _session()

        class _Pc:
            async def close(self) -> None:
                pass

        class _Mic:
            def stop(self) -> None:
                pass

        s._pc, s._mic = _Pc(), _Mic()
        await s._on_rtvi(ww.PeerLeft())
        await asyncio.sleep(0)
        return [ev async for ev in s.events()], s

    events, s = asyncio.run(main())
    assert events == [HangupOut("agent left the call (peerLeft)")]
    with pytest.raises(AgentError) as err:
        s.send_audio_nowait(b"\0" * 640)
    assert err.value.kind == "disconnect"


def test_adapter_options_are_checked_when_the_campaign_loads() -> None:
    def make(url: str = "http://127.0.0.1:7860", **options: Any) -> WebRtcAdapter:
        return WebRtcAdapter(AgentSpec(name="bot", adapter="webrtc", url=url, options=options))

    assert make().loopback and not make("http://192.0.2.7:7860").loopback
    assert make(path="/sessions/x/api/offer").offer_url == "http://127.0.0.1:7860/sessions/x/api/offer"
    assert make().capabilities.input_format.sample_rate == 16000
    for bad in ({"codec": "g729"}, {"sample_rate": 22050}, {"ice_servers": [{"url": "stun:x"}]}):
        with pytest.raises(AgentError) as err:
            make(**bad)
        assert err.value.kind == "connect_failed"
    with pytest.raises(AgentError, match="http"):
        make("ws://127.0.0.1:7860")


def test_request_data_carries_exactly_the_disclosed_facts() -> None:
    from voice_audit.harness.adapter import CallInfo
    from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    adapter = WebRtcAdapter(
        AgentSpec(name="bot", adapter="webrtc", url="http://127.0.0.1:1", options={"request_data": {"k": 1}})
    )
    data = {
        mode: adapter.request_data(
            CallInfo(facts=sc.facts, scenario_id=sc.id, call_id="CA" + "0" * 32, disclosure=mode)
        )
        for mode in ("full", "ids", "none")
    }
    assert set(data["none"]) == {"call_id", "from_number", "k"}
    assert set(data["ids"]) == {"call_id", "from_number", "k", "account_id", "policy_id"}
    assert set(data["full"]) == set(data["ids"]) | {"scenario_id", "facts"}
    assert data["full"]["facts"]["account"]["account_id"] == data["ids"]["account_id"] == "ACC-40817"
