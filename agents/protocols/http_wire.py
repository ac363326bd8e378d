"""The HTTP turn API's request and response bodies (the contract is in `http_turn`'s docstring),
written and read here by both the harness's client (`http_turn`) and the serving front end
(`voice_audit.agents.serve.http_server`). The objects inside them (events, call info, audio format, exposure)
are `event_json`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voice_audit.agents.protocols.event_json import (
    b64encode,
    call_from_json,
    call_to_json,
    event_from_json,
    exposure_to_json,
    format_from_json,
    format_to_json,
)
from voice_audit.harness.adapter import AgentError, AgentEvent, AudioFormat, CallInfo, Capabilities
from voice_audit.harness.model.failures import FailureKind

__all__ = [
    "barge_in_body",
    "dtmf_body",
    "error_body",
    "events_reply",
    "parse_events",
    "read_session_request",
    "read_turn_format",
    "session_reply",
    "session_request",
    "turn_request",
]


def session_request(call: CallInfo, fmt: AudioFormat) -> dict[str, Any]:
    """`POST /sessions`: the call and the caller's audio format."""
    return {"call": call_to_json(call), "audio": format_to_json(fmt)}


def read_session_request(
    body: dict[str, Any], default: Callable[[], CallInfo] | None
) -> tuple[CallInfo, AudioFormat]:
    """The server's reading of `session_request` (`default`: the served agent's own call facts)."""
    call = call_from_json(body.get("call"), default)
    return call, format_from_json(body.get("audio") or {})


def session_reply(session_id: str, events: list[dict[str, Any]], caps: Capabilities) -> dict[str, Any]:
    """`201` to `POST /sessions`: the session, its greeting events and the agent's exposure."""
    return {"session_id": session_id, "events": events, "exposes": exposure_to_json(caps)}


def turn_request(audio: bytes, fmt: AudioFormat) -> dict[str, Any]:
    """`POST /sessions/{id}/turns`: one caller utterance."""
    return {"audio": b64encode(audio), **format_to_json(fmt)}


def read_turn_format(body: dict[str, Any]) -> AudioFormat:
    """The audio format of a `turn_request` (pcm16 at 16 kHz when left out)."""
    return format_from_json(
        {"encoding": body.get("encoding", "pcm16"), "sample_rate": body.get("sample_rate", 16000)}
    )


def events_reply(events: list[dict[str, Any]]) -> dict[str, Any]:
    """`200` to a turn: the agent's events of that turn."""
    return {"events": events}


def parse_events(data: Any) -> list[AgentEvent]:
    """The events of a `session_reply` or an `events_reply`."""
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise AgentError("malformed_frame", "response has no 'events' list")
    return [event_from_json(e) for e in data["events"]]


def dtmf_body(digit: str) -> dict[str, Any]:
    return {"digit": digit}


def barge_in_body(played_ms: int) -> dict[str, Any]:
    return {"played_ms": int(played_ms)}


def error_body(kind: FailureKind, message: str) -> dict[str, Any]:
    """The body of every error status."""
    return {"error": {"kind": kind, "message": message}}
