"""WebRTC signalling as Pipecat's SmallWebRTC serves it, and the RTVI data-channel messages, written
once for the harness's client (`voice_audit.agents.protocols.webrtc`) and the serving front end
(`voice_audit.agents.serve.webrtc_server`).

Signalling (HTTP, JSON; the path is `/api/offer` unless a deployment mounts it elsewhere):
    POST  {url}/api/offer  {"sdp", "type": "offer", "pc_id"?, "restart_pc"?, "request_data"?}
          -> 200 {"sdp", "type": "answer", "pc_id"}
    PATCH {url}/api/offer  {"pc_id", "candidates": [{"candidate", "sdp_mid", "sdp_mline_index"}]}
          -> 200 (trickle ICE; an empty `candidate` is the end-of-candidates marker of RFC 8840)
Pipecat also takes `requestData` for `request_data`; so does `OfferRequest.from_json`.

RTVI (data channel labelled `rtvi-ai`): JSON objects `{"label": "rtvi-ai", "type", "id"?, "data"?}`.
The client announces itself with `client-ready` and keeps the line alive with bare `ping` strings;
the bot's messages we read become `RtviEvent`s (`parse_rtvi`): bot output and transcription
(`BotText`), what its recogniser heard (`UserHeard`, final transcriptions only), function calls
in progress and stopped (`ToolStarted`, `ToolStopped`), bot started/stopped speaking
(`BotSpeaking`), `bot-interrupted`, `bot-ready`, `error`, and Pipecat's own signalling message
`{"type": "signalling", "message": {"type": "peerLeft"}}` (`PeerLeft`: the bot ended the call).

ICE without a server: aiortc reads `RTCConfiguration(iceServers=None)` as "use Google's public
STUN server"; `ice_configuration` passes `[]` unless servers are declared. aioice never offers
127.0.0.1 as a host candidate, so an agent on loopback inside a loopback-only network could not
be reached: `offer_loopback()` makes the peer connections set up in the current context offer it too.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from voice_audit.harness.adapter import AgentError

__all__ = [
    "DEFAULT_PATH",
    "RTVI_LABEL",
    "RTVI_VERSION",
    "Answer",
    "BotInterrupted",
    "BotReady",
    "BotSpeaking",
    "BotText",
    "Candidate",
    "IceServer",
    "OfferRequest",
    "PatchRequest",
    "PeerLeft",
    "RtviError",
    "RtviEvent",
    "ToolStarted",
    "ToolStopped",
    "UserHeard",
    "answer_codec",
    "candidate_line",
    "client_ready",
    "enable_loopback",
    "from_aiortc",
    "ice_configuration",
    "offer_loopback",
    "parse_answer",
    "parse_rtvi",
    "peer_left",
    "result_keys",
    "rtvi",
    "sdp_candidates",
    "strip_candidates",
    "to_aiortc",
    "tool_error",
    "tool_ok",
]

DEFAULT_PATH = "/api/offer"
RTVI_LABEL = "rtvi-ai"
RTVI_VERSION = "2.2.0"
"""The RTVI protocol version we speak (Pipecat 1.14's own)."""


class _Msg(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OfferRequest(_Msg):
    sdp: str = Field(min_length=1)
    type: Literal["offer"] = "offer"
    pc_id: str | None = None
    restart_pc: bool | None = None
    request_data: Any = None

    @classmethod
    def from_json(cls, data: Any) -> OfferRequest:
        if isinstance(data, dict) and "requestData" in data and "request_data" not in data:
            data = {**data, "request_data": data["requestData"]}
            del data["requestData"]
        return cls.model_validate(data)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class Answer(_Msg):
    sdp: str = Field(min_length=1)
    type: Literal["answer"] = "answer"
    pc_id: str = Field(min_length=1)


class Candidate(_Msg):
    """One trickled candidate; `candidate` "" is the end-of-candidates marker."""

    candidate: str
    sdp_mid: str | None = None
    sdp_mline_index: int | None = None


class PatchRequest(_Msg):
    pc_id: str = Field(min_length=1)
    candidates: list[Candidate]


class IceServer(_Msg):
    """A STUN or TURN server the campaign declares (`ice_servers` option); none by default."""

    urls: str | list[str]
    username: str | None = None
    credential: str | None = None


def parse_answer(data: Any) -> Answer:
    """The bot's answer, read leniently (a server may add fields); a wrong shape is `connect_failed`."""
    if not isinstance(data, dict):
        raise AgentError("connect_failed", "offer answered with something other than a JSON object")
    try:
        return Answer.model_validate({k: data.get(k) for k in ("sdp", "type", "pc_id") if k in data})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "answer"
        raise AgentError(
            "connect_failed", f"offer answered with a bad SDP answer: {where}: {first['msg']}"
        ) from None


# -- SDP candidates ------------------------------------------------------------------------------
_CANDIDATE = re.compile(r"^a=(candidate:.*|end-of-candidates)$")


def strip_candidates(sdp: str) -> str:
    """The SDP without its candidate and end-of-candidates lines (they go by PATCH instead)."""
    lines = [ln for ln in sdp.splitlines() if not _CANDIDATE.match(ln.strip())]
    return "\r\n".join(lines) + "\r\n"


def sdp_candidates(sdp: str) -> list[Candidate]:
    """The candidates of an SDP, with the mid and index of their media section, each section's
    list closed by an end-of-candidates marker."""
    out: list[Candidate] = []
    index, mid = -1, None
    for raw in sdp.splitlines():
        ln = raw.strip()
        if ln.startswith("m="):
            if index >= 0:
                out.append(Candidate(candidate="", sdp_mid=mid, sdp_mline_index=index))
            index, mid = index + 1, None
        elif ln.startswith("a=mid:"):
            mid = ln[len("a=mid:") :]
        elif ln.startswith("a=candidate:") and index >= 0:
            out.append(Candidate(candidate=ln[2:], sdp_mid=mid, sdp_mline_index=index))
    if index >= 0:
        out.append(Candidate(candidate="", sdp_mid=mid, sdp_mline_index=index))
    # with BUNDLE only the first section carries candidates: keep markers of sections that had some
    had = {c.sdp_mline_index for c in out if c.candidate}
    return [c for c in out if c.candidate or c.sdp_mline_index in had or not had]


def answer_codec(sdp: str) -> tuple[str, int] | None:
    """(MIME type, clock rate) of the first codec of the answer's audio section: the one used."""
    in_audio, first = False, None
    for raw in sdp.splitlines():
        ln = raw.strip()
        if ln.startswith("m="):
            in_audio = ln.startswith("m=audio")
            parts = ln.split()
            first = parts[3] if in_audio and len(parts) > 3 else None
        elif in_audio and first is not None and ln.startswith(f"a=rtpmap:{first} "):
            name, _, rate = ln.split(" ", 1)[1].partition("/")
            return f"audio/{name}", int(rate.split("/")[0] or 0)
    return None


def candidate_line(c: Candidate) -> str:
    """The candidate attribute without its `candidate:` prefix (aiortc's `candidate_from_sdp` form;
    browsers send it with the prefix)."""
    text = c.candidate.strip()
    return text[len("candidate:") :] if text.startswith("candidate:") else text


def to_aiortc(c: Candidate) -> Any:
    """An aiortc `RTCIceCandidate` (None for the end-of-candidates marker); a garbled line is a
    ValueError naming it."""
    from aiortc.sdp import candidate_from_sdp

    line = candidate_line(c)
    if not line:
        return None
    try:
        cand = candidate_from_sdp(line)
    except (AssertionError, ValueError, IndexError) as exc:
        raise ValueError(f"not an ICE candidate: {c.candidate[:80]!r} ({type(exc).__name__})") from None
    cand.sdpMid = c.sdp_mid
    cand.sdpMLineIndex = c.sdp_mline_index
    return cand


def from_aiortc(cand: Any, sdp_mid: str | None, sdp_mline_index: int | None) -> Candidate:
    from aiortc.sdp import candidate_to_sdp

    return Candidate(
        candidate="candidate:" + candidate_to_sdp(cand), sdp_mid=sdp_mid, sdp_mline_index=sdp_mline_index
    )


# -- ICE configuration ---------------------------------------------------------------------------
def ice_configuration(servers: Any = None) -> Any:
    """aiortc's `RTCConfiguration` with exactly the declared servers (`[]`: no STUN, no TURN)."""
    from aiortc import RTCBundlePolicy, RTCConfiguration, RTCIceServer

    declared: list[IceServer] = []
    for i, s in enumerate(servers or []):
        try:
            declared.append(IceServer.model_validate(s if isinstance(s, dict) else {"urls": s}))
        except ValidationError as exc:
            raise AgentError("connect_failed", f"option ice_servers[{i}]: {exc.errors()[0]['msg']}") from None
    ice = [RTCIceServer(urls=s.urls, username=s.username, credential=s.credential) for s in declared]
    return RTCConfiguration(iceServers=ice, bundlePolicy=RTCBundlePolicy.MAX_BUNDLE)


_loopback: contextvars.ContextVar[bool] = contextvars.ContextVar("va_webrtc_loopback", default=False)
_installed = False


def _install_loopback() -> None:
    """Wrap aioice's host-address lookup once; it adds 127.0.0.1 only where `offer_loopback` is on."""
    global _installed
    if _installed:
        return
    import aioice.ice

    original = aioice.ice.get_host_addresses

    def host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        found: list[str] = original(use_ipv4, use_ipv6)
        if use_ipv4 and _loopback.get() and "127.0.0.1" not in found:
            found = [*found, "127.0.0.1"]
        return found

    aioice.ice.get_host_addresses = host_addresses
    _installed = True


@contextlib.contextmanager
def offer_loopback(on: bool = True) -> Iterator[None]:
    """Peer connections that gather candidates inside this block (and tasks it starts) offer 127.0.0.1."""
    _install_loopback()
    token = _loopback.set(on)
    try:
        yield
    finally:
        _loopback.reset(token)


def enable_loopback() -> None:
    """`offer_loopback` for the rest of the current context (a server's request handler task)."""
    _install_loopback()
    _loopback.set(True)


# -- RTVI ----------------------------------------------------------------------------------------
def rtvi(type_: str, data: Any = None, msg_id: str | None = None) -> str:
    msg: dict[str, Any] = {"label": RTVI_LABEL, "type": type_}
    if msg_id is not None:
        msg["id"] = msg_id
    if data is not None:
        msg["data"] = data
    return json.dumps(msg, separators=(",", ":"))


def client_ready(msg_id: str) -> str:
    return rtvi(
        "client-ready",
        {"version": RTVI_VERSION, "about": {"library": "voice-audit", "platform": "python"}},
        msg_id,
    )


def peer_left() -> str:
    """Pipecat's signalling message before a bot closes the peer connection."""
    return json.dumps({"type": "signalling", "message": {"type": "peerLeft"}}, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class BotText:
    text: str
    segment: int | None = None
    kind: Literal["output", "transcription", "tts"] = "output"


@dataclass(frozen=True, slots=True)
class UserHeard:
    text: str
    kind: Literal["input", "transcription", "stt"] = "input"


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call_id: str
    name: str | None
    arguments: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ToolStopped:
    call_id: str
    name: str | None
    cancelled: bool
    result: Any = None
    has_result: bool = False


@dataclass(frozen=True, slots=True)
class BotSpeaking:
    started: bool


@dataclass(frozen=True, slots=True)
class BotInterrupted:
    pass


@dataclass(frozen=True, slots=True)
class BotReady:
    version: str


@dataclass(frozen=True, slots=True)
class RtviError:
    message: str
    fatal: bool


@dataclass(frozen=True, slots=True)
class PeerLeft:
    pass


RtviEvent = (
    BotText
    | UserHeard
    | ToolStarted
    | ToolStopped
    | BotSpeaking
    | BotInterrupted
    | BotReady
    | RtviError
    | PeerLeft
)


def _data(msg: dict[str, Any]) -> dict[str, Any]:
    d = msg.get("data")
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise ValueError(f"{msg.get('type')}: data is not an object")
    return d


def _text(d: dict[str, Any]) -> str:
    t = d.get("text")
    if not isinstance(t, str):
        raise ValueError("text is not a string")
    return t


def parse_rtvi(raw: str | bytes) -> RtviEvent | None:
    """One data-channel message as an `RtviEvent`; None for what we do not act on (pings, metrics,
    interim transcriptions, message types added later). A message of a known type with the wrong
    shape is a ValueError."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if raw.startswith("ping") or raw.startswith("pong"):
        return None
    try:
        msg = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"data channel message is not JSON: {exc}") from None
    if not isinstance(msg, dict):
        raise ValueError("data channel message is not a JSON object")
    if msg.get("type") == "signalling":
        inner = msg.get("message")
        return PeerLeft() if isinstance(inner, dict) and inner.get("type") == "peerLeft" else None
    if msg.get("label") != RTVI_LABEL:
        return None
    t = msg.get("type")
    d = _data(msg)
    if t == "bot-output":
        # v2: one "new" message per segment (the whole text), then progress/"completed" messages
        if d.get("spoken_status") not in (None, "new") or d.get("output_type") == "backchannel":
            return None
        seg = d.get("segment_id")
        return BotText(_text(d), seg if isinstance(seg, int) else None, "output")
    if t == "bot-transcription":
        return BotText(_text(d), None, "transcription")
    if t in ("bot-tts-text", "tts-raw-text"):
        return BotText(_text(d), None, "tts")
    if t in ("user-transcription", "user-input", "stt-raw-text"):
        if not d.get("final") or d.get("input_type", "transcription") != "transcription":
            return None
        kind: Literal["input", "transcription", "stt"] = (
            "input" if t == "user-input" else "transcription" if t == "user-transcription" else "stt"
        )
        return UserHeard(_text(d), kind)
    if t in ("llm-function-call-in-progress", "llm-function-call"):
        args = d.get("arguments", d.get("args"))
        if args is not None and not isinstance(args, dict):
            raise ValueError(f"{t}: arguments are not an object")
        name = d.get("function_name")
        return ToolStarted(str(d.get("tool_call_id") or ""), name if isinstance(name, str) else None, args)
    if t == "llm-function-call-stopped":
        name = d.get("function_name")
        return ToolStopped(
            str(d.get("tool_call_id") or ""),
            name if isinstance(name, str) else None,
            bool(d.get("cancelled")),
            d.get("result"),
            "result" in d,
        )
    if t == "bot-started-speaking":
        return BotSpeaking(True)
    if t == "bot-stopped-speaking":
        return BotSpeaking(False)
    if t == "bot-interrupted":
        return BotInterrupted()
    if t == "bot-ready":
        return BotReady(str(d.get("version") or ""))
    if t in ("error", "error-response"):
        err = d.get("error", d.get("message", ""))
        return RtviError(str(err), bool(d.get("fatal")))
    return None


def tool_ok(stop: ToolStopped) -> bool:
    """A stopped call succeeded when it was not cancelled and its result (when reported) does not
    say it failed (`{"ok": false}` or an `error` key, the shapes our tools and most bots return)."""
    if stop.cancelled:
        return False
    r = stop.result
    if isinstance(r, str):
        with contextlib.suppress(json.JSONDecodeError):
            r = json.loads(r)
    if isinstance(r, dict):
        return r.get("ok") is not False and not r.get("error")
    return True


def result_keys(stop: ToolStopped) -> tuple[str, ...]:
    r = stop.result
    if isinstance(r, str):
        with contextlib.suppress(json.JSONDecodeError):
            r = json.loads(r)
    if isinstance(r, dict):
        if isinstance(r.get("result_keys"), list):  # our served agents report keys, not values
            return tuple(sorted(str(k) for k in r["result_keys"]))
        inner = r.get("result")
        if isinstance(inner, dict):
            return tuple(sorted(str(k) for k in inner))
        if "ok" in r or "error" in r:  # an envelope without a result
            return ()
        return tuple(sorted(str(k) for k in r))
    return ()


def tool_error(stop: ToolStopped) -> str | None:
    """Why a stopped call failed, in the bot's words where it gave them; None when it succeeded."""
    if tool_ok(stop):
        return None
    if stop.cancelled:
        return "cancelled"
    r = stop.result
    if isinstance(r, str):
        with contextlib.suppress(json.JSONDecodeError):
            r = json.loads(r)
    err = r.get("error") if isinstance(r, dict) else None
    return str(err)[:200] if err else "tool reported an error"
