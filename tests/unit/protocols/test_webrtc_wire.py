"""The WebRTC signalling codec (Pipecat SmallWebRTC's shapes), candidate handling and RTVI reading."""

from __future__ import annotations

import json

import pytest

from voice_audit.agents.protocols import webrtc_wire as ww
from voice_audit.harness.adapter import AgentError

SDP = (
    "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n"
    "m=audio 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 192.0.2.2\r\na=mid:0\r\n"
    "a=candidate:abc 1 udp 2130706431 192.0.2.2 50000 typ host\r\n"
    "a=candidate:def 1 udp 2130706431 127.0.0.1 50001 typ host\r\n"
    "a=end-of-candidates\r\na=ice-ufrag:u\r\na=ice-pwd:p\r\n"
    "m=application 9 DTLS/SCTP 5000\r\na=mid:1\r\na=sctpmap:5000 webrtc-datachannel 65535\r\n"
)


def test_offer_request_as_pipecat_reads_it() -> None:
    req = ww.OfferRequest(sdp=SDP, request_data={"call_id": "CA1"})
    body = req.to_json()
    assert body == {"sdp": SDP, "type": "offer", "request_data": {"call_id": "CA1"}}
    pipecat = pytest.importorskip("pipecat.transports.smallwebrtc.request_handler")
    parsed = pipecat.SmallWebRTCRequest.from_dict(dict(body))  # Pipecat's own reader of the body
    assert (parsed.sdp, parsed.type, parsed.request_data) == (SDP, "offer", {"call_id": "CA1"})
    assert ww.OfferRequest.from_json({"sdp": SDP, "type": "offer", "requestData": 3}).request_data == 3


def test_offer_request_refuses_what_pipecat_would_refuse() -> None:
    for bad in (
        {"type": "offer"},
        {"sdp": "", "type": "offer"},
        {"sdp": SDP, "type": "answer"},
        {"sdp": SDP, "x": 1},
    ):
        with pytest.raises(ValueError):
            ww.OfferRequest.from_json(bad)


def test_answer_is_read_leniently_and_a_bad_one_is_connect_failed() -> None:
    a = ww.parse_answer({"sdp": SDP, "type": "answer", "pc_id": "SmallWebRTCConnection#0-ab", "extra": 1})
    assert a.pc_id == "SmallWebRTCConnection#0-ab"
    bad: object
    for bad in (
        [],
        {"sdp": SDP, "type": "answer"},
        {"sdp": "", "type": "answer", "pc_id": "x"},
        {"sdp": SDP, "type": "offer", "pc_id": "x"},
    ):
        with pytest.raises(AgentError) as err:
            ww.parse_answer(bad)
        assert err.value.kind == "connect_failed"


def test_patch_request_matches_pipecats_shape() -> None:
    cands = ww.sdp_candidates(SDP)
    patch = ww.PatchRequest(pc_id="pc-1", candidates=cands).model_dump()
    pipecat = pytest.importorskip("pipecat.transports.smallwebrtc.request_handler")
    objs = [pipecat.IceCandidate(**c) for c in patch["candidates"]]  # as Pipecat's proxy route builds them
    assert [o.candidate for o in objs] == [
        "candidate:abc 1 udp 2130706431 192.0.2.2 50000 typ host",
        "candidate:def 1 udp 2130706431 127.0.0.1 50001 typ host",
        "",
    ]
    assert {(o.sdp_mid, o.sdp_mline_index) for o in objs} == {("0", 0)}  # bundled: the first section only


def test_candidates_strip_and_round_trip_through_aiortc() -> None:
    pytest.importorskip("aiortc")
    stripped = ww.strip_candidates(SDP)
    assert "a=candidate" not in stripped and "end-of-candidates" not in stripped
    assert "a=ice-ufrag:u" in stripped and stripped.count("m=") == 2
    first, second, end = ww.sdp_candidates(SDP)
    cand = ww.to_aiortc(first)
    assert (cand.ip, cand.port, cand.type, cand.sdpMid, cand.sdpMLineIndex) == (
        "192.0.2.2",
        50000,
        "host",
        "0",
        0,
    )
    assert cand.foundation == "abc"  # the browser's "candidate:" prefix is not part of it
    assert ww.to_aiortc(end) is None  # end-of-candidates
    back = ww.from_aiortc(ww.to_aiortc(second), "0", 0)
    assert back == second
    with pytest.raises(ValueError, match="not an ICE candidate"):
        ww.to_aiortc(ww.Candidate(candidate="candidate:garbage", sdp_mid="0", sdp_mline_index=0))


def test_ice_configuration_has_no_server_unless_declared() -> None:
    pytest.importorskip("aiortc")
    assert ww.ice_configuration(None).iceServers == []  # aiortc's None would mean Google's STUN
    cfg = ww.ice_configuration(
        [{"urls": "turn:127.0.0.1:3478", "username": "u", "credential": "c"}, "stun:127.0.0.1"]
    )
    assert [(s.urls, s.username) for s in cfg.iceServers] == [
        ("turn:127.0.0.1:3478", "u"),
        ("stun:127.0.0.1", None),
    ]
    with pytest.raises(AgentError, match=r"ice_servers\[0\]"):
        ww.ice_configuration([{"url": "stun:x"}])


def test_loopback_host_candidates_only_where_asked() -> None:
    aioice = pytest.importorskip("aioice.ice")
    with ww.offer_loopback():
        assert "127.0.0.1" in aioice.get_host_addresses(True, False)
    assert "127.0.0.1" not in aioice.get_host_addresses(True, False)
    with ww.offer_loopback(False):
        assert "127.0.0.1" not in aioice.get_host_addresses(True, False)


def _m(type_: str, data: object = None) -> str:
    return json.dumps(
        {"label": "rtvi-ai", "type": type_, "id": "1", **({"data": data} if data is not None else {})}
    )


def test_rtvi_messages_of_a_pipecat_bot() -> None:
    out = ww.parse_rtvi(
        _m("bot-output", {"text": "Hi.", "output_type": "sentence", "segment_id": 4, "spoken_status": "new"})
    )
    assert out == ww.BotText("Hi.", 4, "output")
    assert (
        ww.parse_rtvi(
            _m("bot-output", {"text": "Hi.", "output_type": "sentence", "spoken_status": "completed"})
        )
        is None
    )
    assert ww.parse_rtvi(_m("bot-tts-text", {"text": "Hi."})) == ww.BotText("Hi.", None, "tts")
    final = {"text": "hello", "user_id": "", "timestamp": "t", "final": True}
    assert ww.parse_rtvi(_m("user-transcription", final)) == ww.UserHeard("hello", "transcription")
    assert ww.parse_rtvi(_m("user-transcription", {**final, "final": False})) is None  # interim
    assert ww.parse_rtvi(_m("user-input", {**final, "input_type": "backchannel"})) is None
    started = ww.parse_rtvi(
        _m(
            "llm-function-call-in-progress",
            {"tool_call_id": "c1", "function_name": "issue_refund", "arguments": {"a": 1}},
        )
    )
    assert started == ww.ToolStarted("c1", "issue_refund", {"a": 1})
    assert ww.parse_rtvi(_m("llm-function-call-in-progress", {"tool_call_id": "c2"})) == ww.ToolStarted(
        "c2", None, None
    )
    stop = ww.parse_rtvi(
        _m(
            "llm-function-call-stopped",
            {"tool_call_id": "c1", "cancelled": False, "result": {"ok": True, "result": {"refund_id": "R"}}},
        )
    )
    assert isinstance(stop, ww.ToolStopped) and ww.tool_ok(stop) and ww.result_keys(stop) == ("refund_id",)
    served = ww.ToolStopped("c1", "x", False, {"ok": True, "result_keys": ["b", "a"], "error": None}, True)
    assert ww.tool_ok(served) and ww.result_keys(served) == ("a", "b")
    failed = ww.ToolStopped("c1", "x", False, '{"ok": false, "error": "declined"}', True)
    assert not ww.tool_ok(failed)
    assert not ww.tool_ok(ww.ToolStopped("c1", "x", True))
    assert ww.parse_rtvi(_m("bot-started-speaking")) == ww.BotSpeaking(True)
    assert ww.parse_rtvi(_m("bot-stopped-speaking")) == ww.BotSpeaking(False)
    assert ww.parse_rtvi(_m("bot-interrupted")) == ww.BotInterrupted()
    assert ww.parse_rtvi(_m("error", {"error": "boom", "fatal": True})) == ww.RtviError("boom", True)
    assert ww.parse_rtvi('{"type":"signalling","message":{"type":"peerLeft"}}') == ww.PeerLeft()
    assert ww.parse_rtvi("ping: 123") is None
    assert ww.parse_rtvi(_m("metrics", {"ttfb": []})) is None
    assert ww.parse_rtvi('{"label":"other","type":"bot-output"}') is None
    for bad in ("{", "[1]", _m("bot-output", {"text": 3, "output_type": "sentence"}), _m("bot-output", [1])):
        with pytest.raises(ValueError):
            ww.parse_rtvi(bad)


def test_rtvi_models_validate_what_we_write() -> None:
    """Our server's RTVI messages are valid by Pipecat's own RTVI models."""
    rtvi = pytest.importorskip("pipecat.processors.frameworks.rtvi.models")
    ready = json.loads(ww.client_ready("m1"))
    rtvi.Message.model_validate(ready)
    assert ready["data"]["version"] == rtvi.PROTOCOL_VERSION
    rtvi.BotOutputMessage.model_validate(
        json.loads(ww.rtvi("bot-output", {"text": "Hi.", "output_type": "sentence", "spoken_status": "new"}))
    )
    rtvi.LLMFunctionCallInProgressMessage.model_validate(
        json.loads(
            ww.rtvi(
                "llm-function-call-in-progress", {"tool_call_id": "c", "function_name": "f", "arguments": {}}
            )
        )
    )
    rtvi.LLMFunctionCallStoppedMessage.model_validate(
        json.loads(
            ww.rtvi(
                "llm-function-call-stopped", {"tool_call_id": "c", "cancelled": False, "result": {"ok": True}}
            )
        )
    )
    rtvi.UserTranscriptionMessage.model_validate(
        json.loads(
            ww.rtvi("user-transcription", {"text": "x", "user_id": "", "timestamp": "t", "final": True})
        )
    )


def test_the_codec_the_answer_chose() -> None:
    answer = (
        "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 0 8\r\na=mid:0\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n"
        "m=application 9 DTLS/SCTP 5000\r\n"
    )
    assert ww.answer_codec(answer) == ("audio/PCMU", 8000)
    opus = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 opus/48000/2\r\n"
    assert ww.answer_codec(opus) == ("audio/opus", 48000)
    assert ww.answer_codec("v=0\r\nm=application 9 DTLS/SCTP 5000\r\n") is None
