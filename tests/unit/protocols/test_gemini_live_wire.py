"""The Gemini Live codec against the official SDK's types: every message we write validates strictly
(`extra="forbid"`, camelCase, base64 bytes) as `LiveClientMessage` / `LiveServerMessage` and means
what we meant; messages the SDK's types produce (camelCase or snake_case) read back the same."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from tests.helpers.collect_imports import LazyModule
from voice_audit.agents.protocols import gemini_live_wire as gw
from voice_audit.agents.protocols.gemini_live import usage_quantities
from voice_audit.harness.adapter import AgentError
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

# the SDK is imported by the first test that uses it, not when the file is collected
gt = LazyModule("google.genai.types")

PCM = np.arange(-800, 800, 3, dtype="<i2").tobytes()  # bytes that use +, / and padding in base64


def client(msg: dict[str, Any] | str) -> gt.LiveClientMessage:
    raw = msg if isinstance(msg, str) else gw.dumps(msg)
    return gt.LiveClientMessage.model_validate_json(raw)


def server(msg: dict[str, Any] | str) -> gt.LiveServerMessage:
    raw = msg if isinstance(msg, str) else gw.dumps(msg)
    return gt.LiveServerMessage.model_validate_json(raw)


def _all_tools() -> list[dict[str, Any]]:
    """The tool schemas of every bundled scenario (built-in and scenario-declared tools)."""
    seen: dict[str, dict[str, Any]] = {}
    for _path, scenario in ScenarioLibrary(BUNDLED_LIBRARY).load_all().values():
        for tool in ToolFixture(scenario.facts).schemas():
            seen.setdefault(tool["name"], tool)
    return list(seen.values())


def test_setup_validates_and_carries_what_was_declared() -> None:
    tools = gw.function_declarations(_all_tools())
    assert len(tools) >= 5
    msg = gw.setup(
        model="gemini-live-2.5-flash-preview",
        instructions='Be brief.\n<facts scenario="s" call_id="c">{}</facts>',
        tools=tools,
        voice="Puck",
        language="en-US",
        resumption_handle="h1",
    )
    sdk = client(msg).setup
    assert sdk is not None
    assert sdk.model == "models/gemini-live-2.5-flash-preview"
    assert sdk.generation_config is not None and sdk.generation_config.response_modalities == [
        gt.Modality.AUDIO
    ]
    speech = sdk.generation_config.speech_config
    assert speech is not None and speech.language_code == "en-US"
    assert speech.voice_config and speech.voice_config.prebuilt_voice_config
    assert speech.voice_config.prebuilt_voice_config.voice_name == "Puck"
    assert isinstance(sdk.system_instruction, gt.Content)
    assert sdk.system_instruction.parts and "<facts" in (sdk.system_instruction.parts[0].text or "")
    assert sdk.session_resumption is not None and sdk.session_resumption.handle == "h1"
    assert sdk.input_audio_transcription is not None and sdk.output_audio_transcription is not None
    assert sdk.tools and sdk.tools[0].function_declarations
    declared = {d.name: d for d in sdk.tools[0].function_declarations}
    assert set(declared) == {t["name"] for t in tools}
    policy = declared["policy_lookup"].parameters
    assert policy is not None and policy.type == gt.Type.OBJECT and policy.required == ["topic"]
    assert policy.properties and policy.properties["topic"].type == gt.Type.STRING
    escalate = declared["escalate_to_human"].parameters
    assert escalate and escalate.properties and escalate.properties["flags"].items
    assert escalate.properties["flags"].items.type == gt.Type.STRING
    # no voice, no tools, no resumption handle: those keys are left out, still valid
    bare = client(gw.setup(model="models/m", instructions="x", tools=[], transcription=False)).setup
    assert bare is not None and bare.tools is None and bare.input_audio_transcription is None
    assert bare.session_resumption is not None and bare.session_resumption.handle is None
    assert bare.generation_config is not None and bare.generation_config.speech_config is None


def test_every_client_message_validates_strictly() -> None:
    audio = client(gw.realtime_audio(PCM)).realtime_input
    assert audio is not None and audio.audio is not None
    assert audio.audio.data == PCM and audio.audio.mime_type == "audio/pcm;rate=16000"
    assert json.loads(gw.realtime_audio(PCM)) == {
        "realtimeInput": {"audio": {"data": base64.b64encode(PCM).decode(), "mimeType": gw.INPUT_MIME}}
    }
    end = client(gw.audio_stream_end()).realtime_input
    assert end is not None and end.audio_stream_end is True
    text = client(gw.realtime_text("DTMF 5")).realtime_input
    assert text is not None and text.text == "DTMF 5"
    tr = client(gw.tool_response([("call-1", "crm_lookup", {"output": {"plan": "basic"}})])).tool_response
    assert tr is not None and tr.function_responses
    fr = tr.function_responses[0]
    assert (fr.id, fr.name, fr.response) == ("call-1", "crm_lookup", {"output": {"plan": "basic"}})


def test_every_server_message_validates_strictly() -> None:
    done = server(gw.setup_complete("sess_1")).setup_complete
    assert done is not None and done.session_id == "sess_1"
    assert server(gw.setup_complete()).setup_complete is not None
    content = server(gw.model_audio(PCM)).server_content
    assert content and content.model_turn and content.model_turn.parts
    blob = content.model_turn.parts[0].inline_data
    assert blob is not None and blob.data == PCM and blob.mime_type == "audio/pcm;rate=24000"
    out = server(gw.output_transcription("Hello")).server_content
    assert out and out.output_transcription and out.output_transcription.text == "Hello"
    heard = server(gw.input_transcription("my name", finished=True)).server_content
    assert heard and heard.input_transcription and heard.input_transcription.finished is True
    assert (server(gw.interrupted()).server_content or gt.LiveServerContent()).interrupted is True
    assert (server(gw.turn_complete()).server_content or gt.LiveServerContent()).turn_complete is True
    gen = server(gw.generation_complete()).server_content
    assert gen is not None and gen.generation_complete is True
    call = server(gw.tool_call([("fc-1", "issue_refund", {"amount": "12.50"})])).tool_call
    assert call and call.function_calls and call.function_calls[0].args == {"amount": "12.50"}
    assert call.function_calls[0].id == "fc-1" and call.function_calls[0].name == "issue_refund"
    cancel = server(gw.tool_call_cancellation(["fc-1"])).tool_call_cancellation
    assert cancel is not None and cancel.ids == ["fc-1"]
    usage = server(gw.usage_metadata(64, 96)).usage_metadata
    assert usage and (usage.prompt_token_count, usage.response_token_count, usage.total_token_count) == (
        64,
        96,
        160,
    )
    assert usage.prompt_tokens_details and usage.prompt_tokens_details[0].modality == gt.MediaModality.AUDIO
    away = server(gw.go_away(2.5)).go_away
    assert away is not None and away.time_left == "2.5s"
    assert (server(gw.go_away(10)).go_away or gt.LiveServerGoAway()).time_left == "10s"
    upd = server(gw.resumption_update("h2", True)).session_resumption_update
    assert upd is not None and (upd.new_handle, upd.resumable) == ("h2", True)


def test_sdk_server_messages_read_back() -> None:
    msg = gt.LiveServerMessage(
        server_content=gt.LiveServerContent(
            model_turn=gt.Content(
                parts=[gt.Part(inline_data=gt.Blob(data=PCM, mime_type="audio/pcm;rate=24000"))]
            ),
            output_transcription=gt.Transcription(text="Sure."),
            input_transcription=gt.Transcription(text="refund please", finished=True),
            turn_complete=True,
            interrupted=False,
        ),
        usage_metadata=gt.UsageMetadata(
            prompt_token_count=10,
            response_token_count=20,
            total_token_count=30,
            prompt_tokens_details=[gt.ModalityTokenCount(modality=gt.MediaModality.AUDIO, token_count=8)],
        ),
        session_resumption_update=gt.LiveServerSessionResumptionUpdate(new_handle="h", resumable=True),
        go_away=gt.LiveServerGoAway(time_left="9.5s"),
    )
    for raw in (
        msg.model_dump_json(by_alias=True, exclude_none=True),
        msg.model_dump_json(exclude_none=True),
    ):
        ours = gw.parse_server(raw)
        c = ours.server_content
        assert c is not None and c.model_turn is not None and c.model_turn.parts[0].inline_data is not None
        assert c.model_turn.parts[0].inline_data.pcm("audio") == PCM
        assert gw.audio_rate(c.model_turn.parts[0].inline_data.mime_type) == 24000
        assert c.output_transcription and c.output_transcription.text == "Sure."
        assert c.input_transcription and c.input_transcription.finished is True
        assert c.turn_complete is True and c.interrupted is False
        assert ours.go_away is not None and ours.go_away.seconds == 9.5
        assert ours.session_resumption_update and ours.session_resumption_update.new_handle == "h"
        assert ours.usage_metadata is not None
        assert usage_quantities(ours.usage_metadata) == {
            "input_tokens": 10.0,
            "output_tokens": 20.0,
            "total_tokens": 30.0,
            "input_audio_tokens": 8.0,
        }
    call = gt.LiveServerMessage(
        tool_call=gt.LiveServerToolCall(function_calls=[gt.FunctionCall(id="f1", name="crm_lookup", args={})])
    )
    read = gw.parse_server(call.model_dump_json(by_alias=True, exclude_none=True)).tool_call
    assert read is not None and (read.function_calls[0].id, read.function_calls[0].args) == ("f1", {})


def test_sdk_client_messages_read_back_in_either_case() -> None:
    setup = gt.LiveClientMessage(
        setup=gt.LiveClientSetup(
            model="models/m",
            system_instruction=gt.Content(parts=[gt.Part(text="a "), gt.Part(text="b")]),
            tools=[gt.Tool(function_declarations=[gt.FunctionDeclaration(name="crm_lookup")])],
            input_audio_transcription=gt.AudioTranscriptionConfig(),
            session_resumption=gt.SessionResumptionConfig(handle="h9"),
            generation_config=gt.GenerationConfig(
                speech_config=gt.SpeechConfig(
                    voice_config=gt.VoiceConfig(
                        prebuilt_voice_config=gt.PrebuiltVoiceConfig(voice_name="Kore")
                    )
                )
            ),
        )
    )
    audio = gt.LiveClientMessage(
        realtime_input=gt.LiveClientRealtimeInput(audio=gt.Blob(data=PCM, mime_type="audio/pcm;rate=8000"))
    )
    answer = gt.LiveClientMessage(
        tool_response=gt.LiveClientToolResponse(
            function_responses=[
                gt.FunctionResponse(id="f1", name="crm_lookup", response={"output": {"a_b": 1}})
            ]
        )
    )
    for by_alias in (True, False):
        s = gw.parse_client(setup.model_dump_json(by_alias=by_alias, exclude_none=True)).setup
        assert s is not None and gw.system_text(s.system_instruction) == "a b"
        assert [d.name for t in s.tools for d in t.function_declarations] == ["crm_lookup"]
        assert s.input_audio_transcription == {} and s.output_audio_transcription is None
        assert s.session_resumption is not None and s.session_resumption.handle == "h9"
        assert s.generation_config and s.generation_config.speech_config
        assert s.generation_config.speech_config.voice_config
        assert s.generation_config.speech_config.voice_config.prebuilt_voice_config
        assert s.generation_config.speech_config.voice_config.prebuilt_voice_config.voice_name == "Kore"
        ri = gw.parse_client(audio.model_dump_json(by_alias=by_alias, exclude_none=True)).realtime_input
        assert ri is not None and ri.audio is not None and ri.audio.pcm("audio") == PCM
        assert gw.audio_rate(ri.audio.mime_type, 16000) == 8000
        tr = gw.parse_client(answer.model_dump_json(by_alias=by_alias, exclude_none=True)).tool_response
        assert tr is not None and tr.function_responses[0].response == {
            "output": {"a_b": 1}
        }  # data keys kept


def test_reading_is_lenient_about_new_fields_and_strict_about_types() -> None:
    later = {"serverContent": {"turnComplete": True, "someFieldAddedLater": {"x": 1}}, "newTopLevel": 1}
    assert (gw.parse_server(json.dumps(later)).server_content or gw.ServerContent()).turn_complete is True
    with pytest.raises(Exception, match="extra"):
        server(later)  # the SDK's public types refuse it: we never write such a message
    wrong_types = (
        '{"serverContent":{"turnComplete":"yes"}}',  # read strictly: a string is not a boolean
        '{"serverContent":{"interrupted":1}}',
        '{"usageMetadata":{"totalTokenCount":"3"}}',
        '{"setupComplete":{"sessionId":5}}',
        '{"goAway":{"timeLeft":10}}',
    )
    for raw in (
        "not json",
        "[1]",
        '{"toolCall":{"functionCalls":"x"}}',
        '{"serverContent":{"modelTurn":3}}',
        *wrong_types,
    ):
        with pytest.raises(AgentError) as info:
            gw.parse_server(raw)
        assert info.value.kind == "malformed_frame"
    bad_audio = (
        '{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm","data":"***"}}]}}}'
    )
    blob = (gw.parse_server(bad_audio).server_content or gw.ServerContent()).model_turn
    assert blob is not None and blob.parts[0].inline_data is not None
    with pytest.raises(AgentError) as info:
        blob.parts[0].inline_data.pcm("audio")
    assert info.value.kind == "malformed_frame"


def test_schema_conversion_keeps_what_the_api_subset_holds() -> None:
    converted = gw.gemini_schema(
        {
            "type": "object",
            "properties": {"d": {"type": "string", "description": "YYYY-MM-DD", "pattern": "x"}},
            "required": ["d"],
            "additionalProperties": False,
        }
    )
    assert converted == {
        "type": "OBJECT",
        "properties": {"d": {"type": "STRING", "description": "YYYY-MM-DD"}},
        "required": ["d"],
    }
    gt.Schema.model_validate(converted)
    assert gw.model_name("gemini-x") == "models/gemini-x" and gw.model_name("models/y") == "models/y"
