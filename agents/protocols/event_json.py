"""The JSON objects both of our own contracts carry: agent events, call info, audio format, exposure.

The HTTP turn API (`http_wire`) and the WebSocket streaming contract (`ws_wire`) carry agent
events as small JSON objects tagged by `type`, and the call and its audio format as the objects
below; each protocol's own requests and frames are in its wire module. Clients and serving front
ends use this one codec, so a field can never drift between a client and the server it is tested
against.

Agent event objects (`type` first):

    {"type": "audio", "audio": <b64>, "sample_rate": 16000, "encoding": "pcm16"|"mulaw"}
    {"type": "text", "text": str}                      words the agent says
    {"type": "heard", "text": str, "confidence": float|null}
    {"type": "tool_call", "call_id": str, "name": str, "arguments": {...}}
    {"type": "tool_result", "call_id": str, "name": str, "ok": bool, "result_keys": [str], "error": str|null}
    {"type": "state", "from": str, "to": str, "flags": [str]}
    {"type": "facts_seen", "sha256": str}
    {"type": "mark", "name": str}
    {"type": "clear"}
    {"type": "hangup", "reason": str}
    {"type": "error", "kind": <FailureKind>, "message": str, "fatal": bool}
    {"type": "turn_end", "compute_ms": float|null}
    {"type": "usage", "quantities": {meter: number}, "source": str, "model": str|null, "unknown": [meter]}
                                                       what the agent consumed (a meter left out is unknown)
    {"type": "signal", "name": str, "detail": {str: scalar}}   a protocol signal, logged as agent_signal
    {"type": "rate_limit", "retry_after_s": float, "source": str, "message": str}

Call info (`call_to_json`) is one object:

    {"call_id": str,            the call's id (also in the episode log: `call_started.call_id`)
     "caller_number": str,
     "disclosure": "full"|"ids"|"none",   the campaign's `facts_disclosure`
     "facts": <Facts>|null,     the scenario facts, under `full` only
     "facts_sha256": str|null,  their hash (canonical JSON), under `full` only: report it back
                                in a `facts_seen` event to prove what the agent acted on
     "ids": {"account_id": str, "policy_id": str}|null,   under `full` and `ids`
     "scenario_id": str|null}   under `full` only

A server that receives no facts (`ids`, `none`) uses its own (`call_from_json(default=...)`: a
served agent's default scenario), or refuses the call.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    Capabilities,
    ClearOut,
    ErrorOut,
    FactsSeenOut,
    HangupOut,
    HeardOut,
    MarkOut,
    RateLimitOut,
    SignalOut,
    StateOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
    UsageOut,
)
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.model.campaign import AgentSpec, FactsDisclosure
from voice_audit.harness.model.failures import FAILURE_KINDS, FailureKind
from voice_audit.scenarios import Facts

__all__ = [
    "b64decode",
    "b64encode",
    "call_from_json",
    "call_to_json",
    "declared_exposure",
    "event_from_json",
    "event_to_json",
    "exposure_to_json",
    "format_from_json",
    "format_to_json",
    "option_capabilities",
    "option_format",
]


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: Any, what: str = "audio") -> bytes:
    """Strict base64: a bad payload is a malformed frame, never silently empty audio."""
    if not isinstance(text, str):
        raise AgentError("malformed_frame", f"{what} must be a base64 string, got {type(text).__name__}")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise AgentError("malformed_frame", f"{what} is not valid base64: {exc}") from None


_MODES: dict[str, FactsDisclosure] = {"full": "full", "ids": "ids", "none": "none"}


def call_to_json(call: CallInfo) -> dict[str, Any]:
    sent = disclose(call.facts, call.disclosure)
    full = sent.facts is not None
    return {
        "call_id": call.call_id,
        "caller_number": call.caller_number,
        "disclosure": sent.mode,
        "facts": sent.facts,
        "facts_sha256": call.facts_sha256 if full else None,
        "ids": sent.ids,
        "scenario_id": call.scenario_id if full else None,
    }


def call_from_json(data: Any, default: Callable[[], CallInfo] | None = None) -> CallInfo:
    """The call a server was sent; without facts in it, the server's own `default` call's facts."""
    if not isinstance(data, dict):
        raise AgentError("malformed_frame", "call must be a JSON object")
    raw = data.get("disclosure") or "full"
    mode = _MODES.get(raw) if isinstance(raw, str) else None
    if mode is None:
        raise AgentError("malformed_frame", f"call disclosure must be full, ids or none, not {raw!r}")
    try:
        if data.get("facts") is not None:
            facts = Facts.model_validate(data["facts"])
            scenario = str(data["scenario_id"])
        elif default is not None:
            fallback = default()
            facts, scenario = fallback.facts, str(data.get("scenario_id") or fallback.scenario_id)
        elif "facts" in data:
            raise AgentError(
                "protocol_error", f"the call discloses no facts ({mode}) and this agent has none of its own"
            )
        else:
            raise KeyError("facts")
        return CallInfo(
            facts=facts,
            scenario_id=scenario,
            call_id=str(data.get("call_id") or CallInfo(facts=facts, scenario_id="").call_id),
            caller_number=str(data.get("caller_number") or "+15550100000"),
            disclosure=mode,
        )
    except KeyError as exc:
        raise AgentError("malformed_frame", f"call is missing {exc}") from None
    except ValidationError as exc:
        raise AgentError("malformed_frame", f"call facts are invalid: {exc.error_count()} errors") from None


def exposure_to_json(caps: Capabilities) -> dict[str, bool]:
    """An agent's declaration of what its events carry (HTTP session reply, WS `started`)."""
    return {"transcripts": caps.transcripts, "tool_trace": caps.tool_trace}


def declared_exposure(caps: Capabilities, data: Any) -> Capabilities:
    """`caps` with what the agent declared: a declared flag wins, an undeclared one keeps the
    campaign's (off unless the options say so). Anything but a JSON object declares nothing."""
    if not isinstance(data, dict):
        return caps
    flags = {k: data[k] for k in ("transcripts", "tool_trace") if isinstance(data.get(k), bool)}
    return dataclasses.replace(caps, **flags)


def option_format(options: dict[str, Any]) -> AudioFormat:
    """An adapter's input format from its `encoding` / `sample_rate` options (pcm16 at 16 kHz)."""
    return format_from_json(
        {"encoding": options.get("encoding", "pcm16"), "sample_rate": options.get("sample_rate", 16000)}
    )


def option_capabilities(spec: AgentSpec, protocol: str, turn_based: bool) -> Capabilities:
    """An HTTP/WS adapter's capabilities before any call: exposure only as its options declare
    (the agent's own declaration, per call, comes later: `declared_exposure`)."""
    return Capabilities(
        architecture=spec.architecture,
        turn_based=turn_based,
        streaming=not turn_based,
        transcripts=bool(spec.options.get("transcripts", False)),
        tool_trace=bool(spec.options.get("tool_trace", False)),
        fact_provisioning=True,
        input_format=option_format(spec.options),
        protocol=protocol,
    )


def format_to_json(fmt: AudioFormat) -> dict[str, Any]:
    return {"encoding": fmt.encoding, "sample_rate": fmt.sample_rate}


def format_from_json(data: Any) -> AudioFormat:
    if not isinstance(data, dict):
        raise AgentError("malformed_frame", "audio format must be a JSON object")
    enc, rate = data.get("encoding", "pcm16"), data.get("sample_rate", 16000)
    if enc not in ("pcm16", "mulaw") or not isinstance(rate, int) or not 4000 <= rate <= 96000:
        raise AgentError("malformed_frame", f"unsupported audio format {enc!r} at {rate!r} Hz")
    return AudioFormat(enc, rate)


def event_to_json(ev: AgentEvent) -> dict[str, Any]:
    match ev:
        case AudioOut():
            return {
                "type": "audio",
                "audio": b64encode(ev.pcm),
                "sample_rate": ev.sample_rate,
                "encoding": ev.encoding,
            }
        case TextOut():
            return {"type": "text", "text": ev.text}
        case HeardOut():
            return {"type": "heard", "text": ev.text, "confidence": ev.confidence}
        case ToolCallOut():
            return {"type": "tool_call", "call_id": ev.call_id, "name": ev.name, "arguments": ev.arguments}
        case ToolResultOut():
            return {
                "type": "tool_result",
                "call_id": ev.call_id,
                "name": ev.name,
                "ok": ev.ok,
                "result_keys": list(ev.result_keys),
                "error": ev.error,
            }
        case StateOut():
            return {"type": "state", "from": ev.from_state, "to": ev.to_state, "flags": list(ev.flags)}
        case FactsSeenOut():
            return {"type": "facts_seen", "sha256": ev.sha256}
        case MarkOut():
            return {"type": "mark", "name": ev.name}
        case ClearOut():
            return {"type": "clear"}
        case HangupOut():
            return {"type": "hangup", "reason": ev.reason}
        case ErrorOut():
            return {"type": "error", "kind": ev.kind, "message": ev.message, "fatal": ev.fatal}
        case TurnEnd():
            return {"type": "turn_end", "compute_ms": ev.compute_ms}
        case UsageOut():
            return {
                "type": "usage",
                "quantities": {str(k): float(v) for k, v in ev.quantities.items()},
                "source": ev.source,
                "model": ev.model,
                "unknown": list(ev.unknown),
            }
        case SignalOut():
            return {"type": "signal", "name": ev.name, "detail": dict(ev.detail)}
        case RateLimitOut():
            return {
                "type": "rate_limit",
                "retry_after_s": ev.retry_after_s,
                "source": ev.source,
                "message": ev.message,
            }
    raise TypeError(f"not an agent event: {ev!r}")


def _quantities(value: Any) -> dict[str, float]:
    if not isinstance(value, dict):
        raise AgentError("malformed_frame", "usage quantities must be an object of meter -> number")
    out: dict[str, float] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise AgentError(
                "malformed_frame", f"usage quantity {k!r} must be a finite number >= 0, not {v!r}"
            )
        out[str(k)] = float(v)
    return out


def _detail(value: Any) -> dict[str, str | int | float | bool | None]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        v is None or isinstance(v, str | int | float | bool) for v in value.values()
    ):
        raise AgentError("malformed_frame", "signal detail must be an object of scalars")
    return {str(k): v for k, v in value.items()}


def _kind(value: Any) -> FailureKind:
    return value if value in FAILURE_KINDS else "agent_error"


def event_from_json(data: Any) -> AgentEvent:
    """Parse one event object; anything malformed raises AgentError('malformed_frame')."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise AgentError("malformed_frame", "event must be a JSON object with a string 'type'")
    t = data["type"]
    try:
        match t:
            case "audio":
                enc = data.get("encoding", "pcm16")
                if enc not in ("pcm16", "mulaw"):
                    raise AgentError("malformed_frame", f"unknown audio encoding {enc!r}")
                rate = data["sample_rate"]
                if isinstance(rate, bool) or not isinstance(rate, int) or not 4000 <= rate <= 96000:
                    raise AgentError(
                        "malformed_frame",
                        f"audio sample_rate must be an integer in 4000..96000 Hz, not {rate!r}",
                    )
                return AudioOut(b64decode(data["audio"]), rate, enc)
            case "text":
                return TextOut(str(data["text"]))
            case "heard":
                conf = data.get("confidence")
                return HeardOut(str(data["text"]), None if conf is None else float(conf))
            case "tool_call":
                args = data.get("arguments") or {}
                if not isinstance(args, dict):
                    raise AgentError("malformed_frame", "tool_call arguments must be an object")
                return ToolCallOut(str(data["call_id"]), str(data["name"]), args)
            case "tool_result":
                return ToolResultOut(
                    str(data["call_id"]),
                    str(data["name"]),
                    bool(data["ok"]),
                    tuple(str(k) for k in data.get("result_keys") or ()),
                    None if data.get("error") is None else str(data["error"]),
                )
            case "state":
                return StateOut(
                    str(data["from"]), str(data["to"]), tuple(str(f) for f in data.get("flags") or ())
                )
            case "facts_seen":
                return FactsSeenOut(str(data["sha256"]))
            case "mark":
                return MarkOut(str(data["name"]))
            case "clear":
                return ClearOut()
            case "hangup":
                return HangupOut(str(data.get("reason") or "agent hung up"))
            case "error":
                return ErrorOut(
                    _kind(data.get("kind")), str(data.get("message", "")), bool(data.get("fatal", True))
                )
            case "turn_end":
                cm = data.get("compute_ms")
                return TurnEnd(None if cm is None else float(cm))
            case "usage":
                model = data.get("model")
                return UsageOut(
                    _quantities(data.get("quantities")),
                    str(data["source"]),
                    None if model is None else str(model),
                    tuple(str(m) for m in data.get("unknown") or ()),
                )
            case "signal":
                return SignalOut(str(data["name"]), _detail(data.get("detail")))
            case "rate_limit":
                wait = float(data["retry_after_s"])
                if not math.isfinite(wait) or wait < 0:
                    raise AgentError(
                        "malformed_frame", f"rate_limit retry_after_s must be >= 0, not {wait!r}"
                    )
                return RateLimitOut(wait, str(data.get("source", "")), str(data.get("message", "")))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise AgentError("malformed_frame", f"bad {t!r} event: {exc!r}") from None
    raise AgentError("malformed_frame", f"unknown event type {t!r}")
