"""The WebSocket streaming contract's JSON frames (the contract is in `ws_stream`'s docstring),
written and read here by both the harness's client (`ws_stream`) and the serving front end
(`voice_audit.agents.serve.ws_server`). The agent's event frames are `event_json`'s event objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voice_audit.agents.protocols.event_json import (
    call_from_json,
    call_to_json,
    exposure_to_json,
    format_from_json,
    format_to_json,
)
from voice_audit.harness.adapter import AgentError, AudioFormat, CallInfo, Capabilities
from voice_audit.harness.model.failures import FailureKind

__all__ = [
    "barge_in",
    "dtmf",
    "end_turn",
    "error",
    "mark",
    "read_start",
    "read_started",
    "start",
    "started",
    "stop",
]


def start(call: CallInfo, fmt: AudioFormat) -> dict[str, Any]:
    """The harness's first frame: the call and the caller's audio format."""
    return {"type": "start", "call": call_to_json(call), "audio": format_to_json(fmt)}


def read_start(msg: Any, default: Callable[[], CallInfo] | None) -> tuple[CallInfo, AudioFormat]:
    """The server's reading of the first frame (`default`: the served agent's own call facts)."""
    if not isinstance(msg, dict) or msg.get("type") != "start":
        raise AgentError("protocol_error", "first message must be {'type': 'start', ...}")
    call = call_from_json(msg.get("call"), default)
    return call, format_from_json(msg.get("audio") or {})


def started(session_id: str, output: AudioFormat, caps: Capabilities) -> dict[str, Any]:
    """The agent's answer to `start`: its session, its audio format and its exposure."""
    return {
        "type": "started",
        "session_id": session_id,
        "output": format_to_json(output),
        "exposes": exposure_to_json(caps),
    }


def read_started(msg: Any, raw: str | bytes) -> tuple[str, AudioFormat, Any]:
    """The client's reading of the agent's first frame: (session id, output format, `exposes`);
    an `error` frame is the agent refusing the call."""
    if not isinstance(msg, dict) or msg.get("type") != "started":
        if isinstance(msg, dict) and msg.get("type") == "error":
            raise AgentError("connect_failed", f"agent refused the call: {msg.get('message')}")
        raise AgentError("protocol_error", f"expected 'started', got {str(raw)[:80]!r}")
    return str(msg.get("session_id", "")), format_from_json(msg.get("output") or {}), msg.get("exposes")


def end_turn() -> dict[str, Any]:
    return {"type": "end_turn"}


def dtmf(digit: str) -> dict[str, Any]:
    return {"type": "dtmf", "digit": digit}


def mark(name: str) -> dict[str, Any]:
    """The echo of an agent mark once its audio has played."""
    return {"type": "mark", "name": name}


def barge_in(played_ms: int) -> dict[str, Any]:
    return {"type": "barge_in", "played_ms": int(played_ms)}


def stop(reason: str) -> dict[str, Any]:
    return {"type": "stop", "reason": reason}


def error(kind: FailureKind, message: str, fatal: bool) -> dict[str, Any]:
    """An error frame (the agent refusing the call, or a client frame it could not read)."""
    return {"type": "error", "kind": kind, "message": message, "fatal": fatal}
