"""The OpenAI Realtime wire format, written once for the harness's client and the serving front end.

Shapes follow the GA protocol as the official `openai` SDK types it (`openai.types.realtime`);
a test validates every server event the front end emits against those models and has the client
parse events built from them. The beta protocol differs in a few event names and in the session
shape; `BETA_NAMES` is the one table of those names, and `to_ga` maps whatever arrives to the GA
name so readers only ever match GA names.

Conventions a reader can rely on:
- assistant message content is `output_audio` (beta: `audio`) with its `transcript`; content
  parts in `response.content_part.*` are typed `audio`, as the protocol types them;
- transcript deltas carry their own spacing: joined with "" they give the `.done` transcript;
- `input_audio_buffer.speech_started/stopped` report milliseconds of input audio since the
  session began (`audio_start_ms` includes the pre-roll) and the id of the user item the
  commit will create, which `committed` and `conversation.item.created` then use;
- `response.done` says why a response was cancelled: `turn_detected` (the caller spoke) or
  `client_cancelled` (`response.cancel`).
"""

from __future__ import annotations

import json
import secrets
from typing import Any, Literal

from voice_audit.agents.protocols.event_json import b64encode
from voice_audit.harness.adapter import AgentError, AudioFormat

_USAGE_DETAILS: tuple[tuple[str, str, str], ...] = (
    ("input_token_details", "text_tokens", "input_text_tokens"),
    ("input_token_details", "audio_tokens", "input_audio_tokens"),
    ("input_token_details", "cached_tokens", "cached_input_tokens"),
    ("output_token_details", "text_tokens", "output_text_tokens"),
    ("output_token_details", "audio_tokens", "output_audio_tokens"),
)


def usage_quantities(usage: Any) -> dict[str, float]:
    """A `response.done` usage object as meters (input/output tokens, their text and audio parts,
    cached input tokens); only what it carries: an absent count is left out (unknown), never 0."""
    if not isinstance(usage, dict):
        return {}
    out: dict[str, float] = {}
    for key in ("input_tokens", "output_tokens"):
        if isinstance(usage.get(key), int | float):
            out[key] = float(usage[key])
    for group, key, meter in _USAGE_DETAILS:
        details = usage.get(group)
        if isinstance(details, dict) and isinstance(details.get(key), int | float):
            out[meter] = float(details[key])
    return out


def exhausted_wait_s(rate_limits: Any) -> float | None:
    """From a `rate_limits.updated` list: seconds until the first exhausted limit (remaining 0)
    resets, or None when none is exhausted."""
    if not isinstance(rate_limits, list):
        return None
    waits = [
        float(r.get("reset_seconds") or 0.0)
        for r in rate_limits
        if isinstance(r, dict) and isinstance(r.get("remaining"), int | float) and r["remaining"] <= 0
    ]
    return max(waits) if waits else None


__all__ = [
    "BETA_NAMES",
    "MULAW",
    "PCM24",
    "CancelReason",
    "ServerWire",
    "append_message",
    "assistant_item",
    "exhausted_wait_s",
    "format_from_session",
    "function_call_item",
    "join_transcript",
    "new_id",
    "on_wire",
    "session_config",
    "session_format",
    "to_ga",
    "usage_quantities",
    "user_audio_item",
]

PCM24 = AudioFormat("pcm16", 24000)
MULAW = AudioFormat("mulaw", 8000)

BETA_NAMES: dict[str, str] = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
}
"""GA event name -> the beta protocol's name, for every event whose name differs."""
_GA_NAMES = {beta: ga for ga, beta in BETA_NAMES.items()}

CancelReason = Literal["turn_detected", "client_cancelled"]


def to_ga(name: str) -> str:
    """The GA name of an event that arrived under either protocol's name."""
    return _GA_NAMES.get(name, name)


def on_wire(ga_name: str, beta: bool) -> str:
    return BETA_NAMES.get(ga_name, ga_name) if beta else ga_name


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def join_transcript(so_far: str, text: str) -> str:
    """The delta that appends `text` to a transcript: a space between words, never two."""
    if so_far and text and not so_far[-1].isspace() and not text[0].isspace():
        return " " + text
    return text


# -- session ---------------------------------------------------------------------------------------
def session_format(fmt: AudioFormat, beta: bool) -> Any:
    """An audio format as a session names it: GA `{"type": "audio/pcm", "rate": 24000}`, beta `pcm16`."""
    if beta:
        return "g711_ulaw" if fmt.encoding == "mulaw" else "pcm16"
    return {"type": "audio/pcmu"} if fmt.encoding == "mulaw" else {"type": "audio/pcm", "rate": 24000}


def format_from_session(value: Any) -> AudioFormat:
    """Either protocol's format name -> the format; anything else is refused."""
    name = value.get("type") if isinstance(value, dict) else value
    if name in ("audio/pcmu", "g711_ulaw"):
        return MULAW
    if name in ("audio/pcm", "pcm16"):
        return PCM24
    raise AgentError("protocol_error", f"unsupported audio format {name!r}")


def session_config(
    *,
    api: str,
    fmt: AudioFormat,
    instructions: str,
    turn_detection: str,
    tools: list[dict[str, Any]],
    voice: str | None,
    transcription_model: str | None,
) -> dict[str, Any]:
    """The `session` object of a client's `session.update`, in the GA or the beta shape."""
    td: dict[str, Any] | None = None if turn_detection == "none" else {"type": turn_detection}
    beta = api == "beta"
    if beta:
        s: dict[str, Any] = {
            "modalities": ["audio", "text"],
            "instructions": instructions,
            "input_audio_format": session_format(fmt, True),
            "output_audio_format": session_format(fmt, True),
            "turn_detection": td,
            "tools": tools,
            "tool_choice": "auto" if tools else "none",
        }
        if transcription_model:
            s["input_audio_transcription"] = {"model": transcription_model}
        if voice:
            s["voice"] = voice
        return s
    audio_in: dict[str, Any] = {"format": session_format(fmt, False), "turn_detection": td}
    if transcription_model:
        audio_in["transcription"] = {"model": transcription_model}
    audio_out: dict[str, Any] = {"format": session_format(fmt, False)}
    if voice:
        audio_out["voice"] = voice
    return {
        "type": "realtime",
        "output_modalities": ["audio"],
        "instructions": instructions,
        "audio": {"input": audio_in, "output": audio_out},
        "tools": tools,
        "tool_choice": "auto" if tools else "none",
    }


# -- client events -----------------------------------------------------------------------------------
def append_message(chunk: bytes) -> str:
    """`input_audio_buffer.append` as json.dumps would write it: the base64 needs no escaping."""
    return '{"type":"input_audio_buffer.append","audio":"' + b64encode(chunk) + '"}'


def truncate(item_id: str, audio_end_ms: int) -> dict[str, Any]:
    return {
        "type": "conversation.item.truncate",
        "item_id": item_id,
        "content_index": 0,
        "audio_end_ms": audio_end_ms,
    }


def function_call_output(call_id: str, output: dict[str, Any]) -> dict[str, Any]:
    item = {"type": "function_call_output", "call_id": call_id, "output": json.dumps(output, default=str)}
    return {"type": "conversation.item.create", "item": item}


def user_text(text: str) -> dict[str, Any]:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"type": "conversation.item.create", "item": item}


# -- items -----------------------------------------------------------------------------------------
def user_audio_item(item_id: str, transcript: str | None = None) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [{"type": "input_audio", "transcript": transcript}],
    }


def audio_part(transcript: str) -> dict[str, Any]:
    """A content part of `response.content_part.*`: the protocol types it `audio` in both shapes."""
    return {"type": "audio", "transcript": transcript}


def assistant_item(item_id: str, status: str, transcript: str | None, beta: bool) -> dict[str, Any]:
    """An assistant message; `transcript` None while it is still empty (`output_item.added`)."""
    content = (
        []
        if transcript is None
        else [{"type": "audio" if beta else "output_audio", "transcript": transcript}]
    )
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def function_call_item(item_id: str, status: str, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


class ServerWire:
    """Server events as dicts, named for the client's protocol (GA or beta), each with an event_id."""

    def __init__(self, beta: bool = False) -> None:
        self.beta = beta

    def event(self, ga_name: str, **fields: Any) -> dict[str, Any]:
        return {"type": on_wire(ga_name, self.beta), "event_id": new_id("event"), **fields}

    def error(self, code: str, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
        return self.event("error", error={"type": kind, "code": code, "message": message})

    def response(
        self, rid: str, status: str, output: list[dict[str, Any]], reason: CancelReason | None = None
    ) -> dict[str, Any]:
        details: dict[str, Any] | None = None
        if status == "cancelled":
            details = {"type": "cancelled", "reason": reason or "turn_detected"}
        elif status in ("failed", "incomplete"):
            details = {"type": status}
        return {
            "id": rid,
            "object": "realtime.response",
            "status": status,
            "status_details": details,
            "output": output,
            "usage": None,
        }

    def transcription_completed(self, item_id: str, transcript: str, audio_s: float) -> dict[str, Any]:
        """The caller's words as the agent heard them; usage is the audio duration transcribed."""
        return self.event(
            "conversation.item.input_audio_transcription.completed",
            item_id=item_id,
            content_index=0,
            transcript=transcript,
            usage={"type": "duration", "seconds": round(audio_s, 3)},
        )
