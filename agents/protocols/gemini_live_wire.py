"""The Gemini Live API wire format (BidiGenerateContent), written once for the harness's client and
the serving front end.

One WebSocket, JSON text frames (the public server sends them as binary frames; both are read).
Client -> server, one key per message:
    {"setup": {"model": "models/..", "generationConfig": {"responseModalities": ["AUDIO"],
       "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": ..}}}},
       "systemInstruction": {"parts": [{"text": ..}]}, "tools": [{"functionDeclarations": [..]}],
       "inputAudioTranscription": {}, "outputAudioTranscription": {}, "sessionResumption": {"handle"?}}}
    {"realtimeInput": {"audio": {"data": <b64 pcm16>, "mimeType": "audio/pcm;rate=16000"}}}
    {"realtimeInput": {"audioStreamEnd": true}} / {"realtimeInput": {"text": ..}}
    {"toolResponse": {"functionResponses": [{"id", "name", "response": {..}}]}}
Server -> client:
    {"setupComplete": {"sessionId"?}}
    {"serverContent": {"modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000",
       "data": ..}}]}}} / {"serverContent": {"outputTranscription": {"text"}}} / "inputTranscription" /
       {"interrupted": true} / {"generationComplete": true} / {"turnComplete": true}
    {"toolCall": {"functionCalls": [{"id", "name", "args": {..}}]}}, {"toolCallCancellation": {"ids"}}
    {"usageMetadata": {..}}, {"goAway": {"timeLeft": "10s"}},
    {"sessionResumptionUpdate": {"newHandle", "resumable"}}

What we write is camelCase exactly as the `google-genai` SDK's `LiveClientMessage` /
`LiveServerMessage` types validate it (`extra="forbid"`, bytes as base64): a test validates every
builder's output against them. What we read is lenient, as the public server and the SDK's own
receive path are: snake_case or camelCase keys (the SDK itself sends `realtime_input` and
`voice_config`), unknown fields ignored. The reading models below are that lenient subset, so the
product needs no SDK at run time; a field of the wrong type is `AgentError("malformed_frame")`,
read strictly (JSON's own types: `"turnComplete": "yes"` or `"tokenCount": "3"` is not coerced).

Function parameters go out as the API's OpenAPI subset (`gemini_schema`: upper-case types), which
every Live model accepts, not as `parametersJsonSchema`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from voice_audit.agents.protocols.event_json import b64decode, b64encode
from voice_audit.harness.adapter import AgentError, AudioFormat

__all__ = [
    "API_KEY_HEADER",
    "DEFAULT_MODEL",
    "INPUT_FORMAT",
    "INPUT_MIME",
    "OUTPUT_FORMAT",
    "OUTPUT_MIME",
    "ClientMessage",
    "ServerContent",
    "ServerMessage",
    "Setup",
    "audio_rate",
    "audio_stream_end",
    "dumps",
    "function_declarations",
    "gemini_schema",
    "generation_complete",
    "go_away",
    "input_transcription",
    "interrupted",
    "model_audio",
    "model_name",
    "model_text",
    "output_transcription",
    "parse_client",
    "parse_server",
    "proto_b64decode",
    "realtime_audio",
    "realtime_text",
    "resumption_update",
    "setup",
    "setup_complete",
    "system_text",
    "tool_call",
    "tool_call_cancellation",
    "tool_response",
    "turn_complete",
    "usage_metadata",
]

INPUT_FORMAT = AudioFormat("pcm16", 16000)
OUTPUT_FORMAT = AudioFormat("pcm16", 24000)
INPUT_MIME = "audio/pcm;rate=16000"
OUTPUT_MIME = "audio/pcm;rate=24000"
DEFAULT_MODEL = "gemini-live-2.5-flash-preview"
API_KEY_HEADER = "x-goog-api-key"
"""The header the SDK sends an API key in (the key never goes in the URL, which gets logged)."""

_RATE = re.compile(r"rate=(\d+)")


def dumps(msg: dict[str, Any]) -> str:
    return json.dumps(msg, separators=(",", ":"))


def model_name(model: str) -> str:
    """`models/NAME` as the setup names a model (the SDK's own rule: a bare name gets the prefix)."""
    return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"


def audio_rate(mime_type: str | None, default: int = OUTPUT_FORMAT.sample_rate) -> int:
    """The sample rate of `audio/pcm;rate=N` (the API's output is 24 kHz when unsaid); a rate no
    telephone or speech audio has is a malformed frame, not audio to play."""
    m = _RATE.search(mime_type or "")
    if not m:
        return default
    rate = int(m.group(1)[:7])
    if not 4000 <= rate <= 96000:
        raise AgentError("malformed_frame", f"audio mimeType {mime_type!r}: rate out of 4000..96000")
    return rate


# -- client -> server ------------------------------------------------------------------------------
_SCHEMA_KEYS = ("description", "enum", "format", "nullable")


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema (the tool fixture's) as the API's OpenAPI subset: upper-case types, nested
    properties and items converted, keys the subset has no place for dropped."""
    out: dict[str, Any] = {}
    if isinstance(schema.get("type"), str):
        out["type"] = schema["type"].upper()
    for key in _SCHEMA_KEYS:
        if key in schema:
            out[key] = schema[key]
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: gemini_schema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = gemini_schema(schema["items"])
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


def function_declarations(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool schemas in the fixture's shape (`{"type": "function", "name", "description",
    "parameters"}`) as the API's function declarations."""
    out = []
    for tool in tools:
        decl: dict[str, Any] = {"name": str(tool["name"])}
        if tool.get("description"):
            decl["description"] = str(tool["description"])
        params = tool.get("parameters")
        if isinstance(params, dict) and params.get("properties"):
            decl["parameters"] = gemini_schema(params)
        out.append(decl)
    return out


def setup(
    *,
    model: str,
    instructions: str,
    tools: list[dict[str, Any]],
    voice: str | None = None,
    language: str | None = None,
    transcription: bool = True,
    resumption_handle: str | None = None,
    resumption: bool = True,
) -> dict[str, Any]:
    """The first client message. `tools` are function declarations (`function_declarations`);
    with `resumption` the server sends handles to resume from, and `resumption_handle` resumes."""
    generation: dict[str, Any] = {"responseModalities": ["AUDIO"]}
    speech: dict[str, Any] = {}
    if voice:
        speech["voiceConfig"] = {"prebuiltVoiceConfig": {"voiceName": voice}}
    if language:
        speech["languageCode"] = language
    if speech:
        generation["speechConfig"] = speech
    s: dict[str, Any] = {
        "model": model_name(model),
        "generationConfig": generation,
        "systemInstruction": {"parts": [{"text": instructions}]},
    }
    if tools:
        s["tools"] = [{"functionDeclarations": tools}]
    if transcription:
        s["inputAudioTranscription"] = {}
        s["outputAudioTranscription"] = {}
    if resumption:
        s["sessionResumption"] = {"handle": resumption_handle} if resumption_handle else {}
    return {"setup": s}


def realtime_audio(chunk: bytes) -> str:
    """One `realtimeInput` audio message, written directly (50 a second per call): every value is
    base64 or a constant, nothing to escape."""
    return '{"realtimeInput":{"audio":{"data":"' + b64encode(chunk) + '","mimeType":"' + INPUT_MIME + '"}}}'


def audio_stream_end() -> dict[str, Any]:
    return {"realtimeInput": {"audioStreamEnd": True}}


def realtime_text(text: str) -> dict[str, Any]:
    return {"realtimeInput": {"text": text}}


def tool_response(responses: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """(id, name, response object) per answered function call."""
    return {
        "toolResponse": {"functionResponses": [{"id": i, "name": n, "response": r} for i, n, r in responses]}
    }


# -- server -> client ------------------------------------------------------------------------------
def setup_complete(session_id: str | None = None) -> dict[str, Any]:
    return {"setupComplete": {"sessionId": session_id} if session_id else {}}


def model_audio(pcm: bytes, mime_type: str = OUTPUT_MIME) -> str:
    """One chunk of the model's audio, written directly (several a second per call)."""
    return (
        '{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"'
        + mime_type
        + '","data":"'
        + b64encode(pcm)
        + '"}}]}}}'
    )


def model_text(text: str) -> dict[str, Any]:
    """The model's words as a text part (a session whose response modality is TEXT)."""
    return {"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": text}]}}}


def output_transcription(text: str) -> dict[str, Any]:
    return {"serverContent": {"outputTranscription": {"text": text}}}


def input_transcription(text: str, finished: bool = True) -> dict[str, Any]:
    return {"serverContent": {"inputTranscription": {"text": text, "finished": finished}}}


def interrupted() -> dict[str, Any]:
    return {"serverContent": {"interrupted": True}}


def generation_complete() -> dict[str, Any]:
    return {"serverContent": {"generationComplete": True}}


def turn_complete() -> dict[str, Any]:
    return {"serverContent": {"turnComplete": True}}


def tool_call(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """(id, name, args) per function call."""
    return {"toolCall": {"functionCalls": [{"id": i, "name": n, "args": a} for i, n, a in calls]}}


def tool_call_cancellation(ids: list[str]) -> dict[str, Any]:
    return {"toolCallCancellation": {"ids": list(ids)}}


def usage_metadata(
    prompt_audio_tokens: int,
    response_tokens: int,
    response_modality: str = "AUDIO",
    prompt_text_tokens: int = 0,
) -> dict[str, Any]:
    """Token counts of a turn in the API's shape (prompt, response, total, per modality)."""
    prompt = [{"modality": "AUDIO", "tokenCount": prompt_audio_tokens}]
    if prompt_text_tokens:
        prompt.append({"modality": "TEXT", "tokenCount": prompt_text_tokens})
    return {
        "usageMetadata": {
            "promptTokenCount": prompt_audio_tokens + prompt_text_tokens,
            "responseTokenCount": response_tokens,
            "totalTokenCount": prompt_audio_tokens + prompt_text_tokens + response_tokens,
            "promptTokensDetails": prompt,
            "responseTokensDetails": [{"modality": response_modality, "tokenCount": response_tokens}],
        }
    }


def go_away(time_left_s: float) -> dict[str, Any]:
    """The server will close the connection in `time_left_s` (a protobuf Duration, "10s")."""
    return {"goAway": {"timeLeft": f"{max(0.0, time_left_s):.3f}".rstrip("0").rstrip(".") + "s"}}


def resumption_update(new_handle: str | None, resumable: bool) -> dict[str, Any]:
    update: dict[str, Any] = {"resumable": resumable}
    if new_handle:
        update["newHandle"] = new_handle
    return {"sessionResumptionUpdate": update}


# -- reading (lenient) -----------------------------------------------------------------------------
_URLSAFE = str.maketrans("-_", "+/")


def proto_b64decode(text: str, what: str) -> bytes:
    """Bytes as protobuf's JSON mapping allows them: standard or URL-safe base64, padded or not
    (pydantic, and so the SDK's types, write the URL-safe form); anything else is a malformed frame."""
    text = text.translate(_URLSAFE)
    return b64decode(text + "=" * (-len(text) % 4), what)


class _Read(BaseModel):
    """A message part as read: camelCase or snake_case keys, unknown fields ignored (the server
    and clients add fields over time; what we act on is typed)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="ignore",
        frozen=True,
        strict=True,
    )


class Blob(_Read):
    mime_type: str | None = None
    data: str | None = None

    def pcm(self, what: str) -> bytes:
        return proto_b64decode(self.data or "", what)


class Part(_Read):
    text: str | None = None
    inline_data: Blob | None = None


class Content(_Read):
    parts: list[Part] = Field(default_factory=list)
    role: str | None = None


class Transcription(_Read):
    text: str | None = None
    finished: bool | None = None


class ServerContent(_Read):
    model_turn: Content | None = None
    turn_complete: bool | None = None
    interrupted: bool | None = None
    generation_complete: bool | None = None
    input_transcription: Transcription | None = None
    output_transcription: Transcription | None = None


class FunctionCall(_Read):
    id: str | None = None
    name: str | None = None
    args: Any = None


class ToolCall(_Read):
    function_calls: list[FunctionCall] = Field(default_factory=list)


class ToolCallCancellation(_Read):
    ids: list[str] = Field(default_factory=list)


class ModalityTokenCount(_Read):
    modality: str | None = None
    token_count: int | None = None


class UsageMetadata(_Read):
    prompt_token_count: int | None = None
    cached_content_token_count: int | None = None
    response_token_count: int | None = None
    tool_use_prompt_token_count: int | None = None
    thoughts_token_count: int | None = None
    total_token_count: int | None = None
    prompt_tokens_details: list[ModalityTokenCount] = Field(default_factory=list)
    response_tokens_details: list[ModalityTokenCount] = Field(default_factory=list)


class GoAway(_Read):
    time_left: str | None = None

    @property
    def seconds(self) -> float | None:
        try:
            return float((self.time_left or "").removesuffix("s"))
        except ValueError:
            return None


class SessionResumptionUpdate(_Read):
    new_handle: str | None = None
    resumable: bool | None = None
    last_consumed_client_message_index: int | None = None


class SetupComplete(_Read):
    session_id: str | None = None


class ServerMessage(_Read):
    setup_complete: SetupComplete | None = None
    server_content: ServerContent | None = None
    tool_call: ToolCall | None = None
    tool_call_cancellation: ToolCallCancellation | None = None
    usage_metadata: UsageMetadata | None = None
    go_away: GoAway | None = None
    session_resumption_update: SessionResumptionUpdate | None = None


class PrebuiltVoiceConfig(_Read):
    voice_name: str | None = None


class VoiceConfig(_Read):
    prebuilt_voice_config: PrebuiltVoiceConfig | None = None


class SpeechConfig(_Read):
    voice_config: VoiceConfig | None = None
    language_code: str | None = None


class GenerationConfig(_Read):
    response_modalities: list[str] | None = None
    speech_config: SpeechConfig | None = None


class FunctionDeclaration(_Read):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(_Read):
    function_declarations: list[FunctionDeclaration] = Field(default_factory=list)


class SessionResumptionConfig(_Read):
    handle: str | None = None
    transparent: bool | None = None


class AutomaticActivityDetection(_Read):
    disabled: bool | None = None


class RealtimeInputConfig(_Read):
    automatic_activity_detection: AutomaticActivityDetection | None = None


class Setup(_Read):
    model: str | None = None
    generation_config: GenerationConfig | None = None
    realtime_input_config: RealtimeInputConfig | None = None
    system_instruction: Content | str | None = None
    tools: list[Tool] = Field(default_factory=list)
    session_resumption: SessionResumptionConfig | None = None
    input_audio_transcription: dict[str, Any] | None = None
    output_audio_transcription: dict[str, Any] | None = None

    @property
    def manual_activity(self) -> bool:
        """Automatic activity detection is off: the client marks each turn (activityStart/End)."""
        ric = self.realtime_input_config
        aad = ric.automatic_activity_detection if ric is not None else None
        return bool(aad is not None and aad.disabled)

    @property
    def modalities(self) -> list[str]:
        """The response modalities asked for, upper-case (AUDIO when unsaid, as the API)."""
        gen = self.generation_config
        asked = gen.response_modalities if gen is not None and gen.response_modalities else ["AUDIO"]
        return [m.upper() for m in asked]


class RealtimeInput(_Read):
    audio: Blob | None = None
    media_chunks: list[Blob] | None = None
    audio_stream_end: bool | None = None
    text: str | None = None
    activity_start: dict[str, Any] | None = None
    activity_end: dict[str, Any] | None = None


class FunctionResponse(_Read):
    id: str | None = None
    name: str | None = None
    response: dict[str, Any] | None = None


class ToolResponse(_Read):
    function_responses: list[FunctionResponse] = Field(default_factory=list)


class ClientContent(_Read):
    turns: list[Content] | None = None
    turn_complete: bool | None = None


class ClientMessage(_Read):
    setup: Setup | None = None
    client_content: ClientContent | None = None
    realtime_input: RealtimeInput | None = None
    tool_response: ToolResponse | None = None


def system_text(instruction: Content | str | None) -> str:
    """The system instruction's text, whichever shape it came in."""
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    return "".join(p.text or "" for p in instruction.parts)


def _validate(model: type[_Read], raw: str | bytes, who: str) -> Any:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.error_count() else {"loc": (), "msg": str(exc)}
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise AgentError(
            "malformed_frame", f"bad {who} message ({where or 'top level'}: {first.get('msg')})"[:300]
        ) from None


def parse_server(raw: str | bytes) -> ServerMessage:
    """A server message, leniently read; not JSON or a field of the wrong type is a malformed frame."""
    msg: ServerMessage = _validate(ServerMessage, raw, "server")
    return msg


def parse_client(raw: str | bytes) -> ClientMessage:
    msg: ClientMessage = _validate(ClientMessage, raw, "client")
    return msg
