"""The Twilio Media Streams wire format, written once for the harness's client and the serving front end.

Messages are JSON text frames; every counter is a string, exactly as Twilio sends them.

Twilio (the harness) -> bot
    {"event":"connected","protocol":"Call","version":"1.0.0"}
    {"event":"start","sequenceNumber":"1","streamSid":"MZ..","start":{"accountSid":"AC..",
     "streamSid":"MZ..","callSid":"CA..","tracks":["inbound"],"customParameters":{..},
     "mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}
    {"event":"media","sequenceNumber":"2","streamSid":"MZ..","media":{"track":"inbound",
     "chunk":"1","timestamp":"0","payload":<b64 160 bytes mu-law = 20 ms>}}
    {"event":"dtmf","sequenceNumber":..,"streamSid":..,"dtmf":{"track":"inbound_track","digit":"1"}}
    {"event":"mark","sequenceNumber":..,"streamSid":..,"mark":{"name":<echo>}}
    {"event":"stop","sequenceNumber":..,"streamSid":..,"stop":{"accountSid":..,"callSid":..}}
bot -> Twilio
    {"event":"media","streamSid":..,"media":{"payload":<b64 mu-law, any length>}}
    {"event":"mark","streamSid":..,"mark":{"name":..}}
    {"event":"clear","streamSid":..}

`parse` reads any of them into a typed message; a field of the wrong shape is
`AgentError("malformed_frame")`. The shapes are checked against pipecat's `TwilioFrameSerializer`
in both directions by a test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from voice_audit.agents.protocols.event_json import b64decode, b64encode
from voice_audit.harness.adapter import AgentError, AudioFormat

__all__ = [
    "FRAME_BYTES",
    "TWILIO_FORMAT",
    "Clear",
    "Connected",
    "Dtmf",
    "Mark",
    "Media",
    "Other",
    "Start",
    "Stop",
    "TwilioMessage",
    "clear",
    "connected",
    "dtmf",
    "dumps",
    "mark",
    "media_in",
    "media_out",
    "parse",
    "start",
    "stop",
]

TWILIO_FORMAT = AudioFormat("mulaw", 8000)
FRAME_BYTES = 160  # 20 ms of mu-law at 8 kHz
MEDIA_FORMAT = {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}


def dumps(msg: dict[str, Any]) -> str:
    return json.dumps(msg, separators=(",", ":"))


# -- Twilio -> bot ------------------------------------------------------------------------------------
def connected() -> dict[str, Any]:
    return {"event": "connected", "protocol": "Call", "version": "1.0.0"}


def start(
    seq: int, stream_sid: str, account_sid: str, call_sid: str, custom_parameters: dict[str, str]
) -> dict[str, Any]:
    return {
        "event": "start",
        "sequenceNumber": str(seq),
        "streamSid": stream_sid,
        "start": {
            "accountSid": account_sid,
            "streamSid": stream_sid,
            "callSid": call_sid,
            "tracks": ["inbound"],
            "customParameters": custom_parameters,
            "mediaFormat": dict(MEDIA_FORMAT),
        },
    }


def media_in(seq: int, stream_sid: str, chunk: int, timestamp_ms: int, payload: bytes) -> str:
    """One caller `media` message, written directly: json.dumps of a nested dict per 20 ms frame is
    most of a frame's cost, and every value here is a number, a hex id or base64 (nothing to escape)."""
    return (
        f'{{"event":"media","sequenceNumber":"{seq}","streamSid":"{stream_sid}",'
        f'"media":{{"track":"inbound","chunk":"{chunk}","timestamp":"{timestamp_ms}",'
        f'"payload":"{b64encode(payload)}"}}}}'
    )


def dtmf(seq: int, stream_sid: str, digit: str) -> dict[str, Any]:
    return {
        "event": "dtmf",
        "sequenceNumber": str(seq),
        "streamSid": stream_sid,
        "dtmf": {"track": "inbound_track", "digit": digit},
    }


def stop(seq: int, stream_sid: str, account_sid: str, call_sid: str) -> dict[str, Any]:
    return {
        "event": "stop",
        "sequenceNumber": str(seq),
        "streamSid": stream_sid,
        "stop": {"accountSid": account_sid, "callSid": call_sid},
    }


# -- both directions -----------------------------------------------------------------------------------
def mark(stream_sid: str, name: str, seq: int | None = None) -> dict[str, Any]:
    """A bot's mark, or (with `seq`) Twilio's echo of it once the audio before it has played."""
    if seq is None:
        return {"event": "mark", "streamSid": stream_sid, "mark": {"name": name}}
    return {"event": "mark", "sequenceNumber": str(seq), "streamSid": stream_sid, "mark": {"name": name}}


# -- bot -> Twilio -------------------------------------------------------------------------------------
def media_out(stream_sid: str, payload: bytes | str) -> dict[str, Any]:
    """Bot audio; `payload` as bytes, or a str sent verbatim (a chaos agent's bad payload)."""
    b64 = payload if isinstance(payload, str) else b64encode(payload)
    return {"event": "media", "streamSid": stream_sid, "media": {"payload": b64}}


def clear(stream_sid: str) -> dict[str, Any]:
    return {"event": "clear", "streamSid": stream_sid}


# -- parsing -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Connected:
    pass


@dataclass(frozen=True, slots=True)
class Start:
    stream_sid: str
    call_sid: str
    account_sid: str
    custom_parameters: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Media:
    payload: bytes


@dataclass(frozen=True, slots=True)
class Dtmf:
    digit: str


@dataclass(frozen=True, slots=True)
class Mark:
    name: str


@dataclass(frozen=True, slots=True)
class Clear:
    pass


@dataclass(frozen=True, slots=True)
class Stop:
    pass


@dataclass(frozen=True, slots=True)
class Other:
    """An event this codec does not act on (Twilio adds some over time); readers ignore it."""

    event: str


TwilioMessage = Connected | Start | Media | Dtmf | Mark | Clear | Stop | Other


def _obj(msg: dict[str, Any], key: str) -> dict[str, Any]:
    value = msg.get(key) or {}
    if not isinstance(value, dict):
        raise AgentError("malformed_frame", f"{key!r} must be an object")
    return value


def parse(raw: str | bytes) -> TwilioMessage:
    if isinstance(raw, bytes):
        raise AgentError("malformed_frame", f"binary frame of {len(raw)} bytes on a Twilio stream")
    try:
        msg = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise AgentError("malformed_frame", f"invalid JSON: {exc}") from None
    if not isinstance(msg, dict):
        raise AgentError("malformed_frame", "message is not a JSON object")
    event = msg.get("event")
    if event == "media":
        return Media(b64decode(_obj(msg, "media").get("payload"), "media.payload"))
    if event == "mark":
        name = _obj(msg, "mark").get("name")
        if not isinstance(name, str):
            raise AgentError("malformed_frame", "mark without a string name")
        return Mark(name)
    if event == "clear":
        return Clear()
    if event == "dtmf":
        digit = _obj(msg, "dtmf").get("digit")
        if not isinstance(digit, str):
            raise AgentError("malformed_frame", "dtmf without a string digit")
        return Dtmf(digit)
    if event == "start":
        s = _obj(msg, "start")
        params = s.get("customParameters") or {}
        if not isinstance(params, dict):
            raise AgentError("malformed_frame", "start.customParameters must be an object")
        return Start(
            stream_sid=str(msg.get("streamSid") or s.get("streamSid") or ""),
            call_sid=str(s.get("callSid") or ""),
            account_sid=str(s.get("accountSid") or ""),
            custom_parameters={str(k): str(v) for k, v in params.items()},
        )
    if event == "connected":
        return Connected()
    if event == "stop":
        return Stop()
    return Other(str(event))
