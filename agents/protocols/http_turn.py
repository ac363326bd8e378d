"""HTTP turn API client: one JSON request per caller turn, for turn-based agents.

Wire contract (JSON bodies, UTF-8; audio is base64 of raw samples):

    POST   {url}/sessions
           {"call": <call info, see event_json.py>, "audio": {"encoding":"pcm16","sample_rate":16000}}
        -> 201 {"session_id": str, "events": [<greeting events, ending in turn_end or hangup>],
                "exposes": {"transcripts": bool, "tool_trace": bool}}
    POST   {url}/sessions/{id}/turns
           {"audio": <b64>, "encoding": "pcm16", "sample_rate": 16000}
        -> 200 {"events": [<agent events of this turn, ending in turn_end or hangup>]}
    POST   {url}/sessions/{id}/dtmf      {"digit": "1"}        -> 204
    POST   {url}/sessions/{id}/barge_in  {"played_ms": 1200}   -> 204
    DELETE {url}/sessions/{id}?reason=..                        -> 204

Event objects are those of `event_json.py`; both sides write and read the bodies with
`http_wire.py`. `DELETE` is sent once when the call ends, whoever ended it (the caller hanging
up, the agent hanging up or failing, the harness giving up); a session the agent already ended
may answer it 204 or 404.

Exposure: `exposes` in the session reply is the agent's declaration that its events carry every
word it says (`transcripts`: `text` events) and every tool call it makes (`tool_trace`:
`tool_call` / `tool_result` events). What it does not declare is recorded as not exposed (the
episode header's `exposure`), so analysis reports the metrics built on it as missing rather than
zero; a missing `exposes` declares nothing. Options `transcripts` / `tool_trace` declare for an
agent that cannot say it itself; the agent's own declaration wins.

Errors answer with a status and `{"error": {"kind": <FailureKind>, "message": str}}`:
400 a request the server cannot read (`malformed_frame`); 404 an unknown session; 422 a call the
agent cannot take (`protocol_error`, e.g. no facts disclosed and none of its own); 502 the agent
failed (its own kind); 504 the agent did not finish its turn in time (`timeout_turn`).

Failure kinds on the client side: connection refused at session creation -> `connect_failed`;
later -> `disconnect`; no answer within `turn_timeout_s` (or a 504) -> `timeout_turn`; other 5xx
-> `http_error`; other 4xx -> `protocol_error`; a body that is not the JSON above ->
`malformed_frame`. The failing call raises `AgentError`, and the event stream ends with the
same `ErrorOut`, so the runtime sees the failure whichever side it is watching.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from voice_audit.agents.protocols._secrets import expand_headers
from voice_audit.agents.protocols._stream import EventChannel, OpenSessions, describe
from voice_audit.agents.protocols.event_json import declared_exposure, option_capabilities
from voice_audit.agents.protocols.http_wire import (
    barge_in_body,
    dtmf_body,
    parse_events,
    session_request,
    turn_request,
)
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioFormat,
    CallInfo,
    Capabilities,
    ErrorOut,
    HangupOut,
    RateLimited,
    retry_after_seconds,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.model.failures import FailureKind

__all__ = ["HttpTurnAdapter", "HttpTurnSession", "http_adapter"]


class HttpTurnSession:
    def __init__(
        self, adapter: HttpTurnAdapter, session_id: str, fmt: AudioFormat, capabilities: Capabilities
    ) -> None:
        self._adapter = adapter
        self.session_id = session_id
        self.capabilities = capabilities
        """The adapter's, with what the agent declared it exposes on this call."""
        self._fmt = fmt
        self._buf = bytearray()
        self._chan = EventChannel()
        self._closed = False

    @property
    def _base(self) -> str:
        return f"{self._adapter.url}/sessions/{self.session_id}"

    def _ensure_open(self) -> None:
        if self._closed or self._chan.done:
            raise AgentError("disconnect", f"session is over ({self._chan.end_reason or 'closed'})")

    async def _fail(self, exc: AgentError) -> AgentError:
        self._chan.put_final(ErrorOut(exc.kind, exc.message))
        self._chan.finish(exc.message)
        return exc

    async def deliver(self, events: list[AgentEvent]) -> None:
        for ev in events:
            if isinstance(ev, HangupOut) or (isinstance(ev, ErrorOut) and ev.fatal):
                self._chan.put_final(ev)
                self._chan.finish(describe(ev))
                return
            await self._chan.put(ev)

    async def send_audio(self, chunk: bytes) -> None:
        self._ensure_open()
        self._buf += chunk

    async def end_turn(self) -> None:
        """POST the buffered utterance; the answer's events are queued for `events()`."""
        self._ensure_open()
        audio, self._buf = bytes(self._buf), bytearray()
        body = turn_request(audio, self._fmt)
        try:
            data = await self._adapter.request("POST", f"{self._base}/turns", body, "disconnect")
            await self.deliver(parse_events(data))
        except AgentError as exc:
            raise await self._fail(exc) from None

    async def send_dtmf(self, digit: str) -> None:
        self._ensure_open()
        try:
            await self._adapter.request("POST", f"{self._base}/dtmf", dtmf_body(digit), "disconnect")
        except AgentError as exc:
            raise await self._fail(exc) from None

    async def mark_played(self, name: str) -> None:
        """The turn API has no marks; nothing to echo."""

    async def barge_in(self, played_ms: int) -> None:
        self._ensure_open()
        try:
            await self._adapter.request(
                "POST", f"{self._base}/barge_in", barge_in_body(played_ms), "disconnect"
            )
        except AgentError as exc:
            raise await self._fail(exc) from None

    def events(self) -> AsyncIterator[AgentEvent]:
        return self._chan.events()

    async def close(self, reason: str) -> None:
        """End the session on the agent's side too: DELETE is sent whoever ended the call."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._adapter.request(
                "DELETE", self._base, None, "disconnect", params={"reason": reason[:200]}
            )
        except AgentError:
            pass  # the call is over either way (a 404 for a session the agent ended is fine)
        finally:
            self._chan.finish(f"closed by harness: {reason}")


class HttpTurnAdapter:
    """Options: `sample_rate` (16000), `encoding` ("pcm16"), `turn_timeout_s` (30),
    `connect_timeout_s` (10), `transcripts`/`tool_trace` (exposure declared for the agent;
    default: only what the agent declares), `headers` (dict; a value may reference the
    environment as `${NAME}`, the way to pass a credential)."""

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.url:
            raise AgentError("connect_failed", f"agent {spec.name!r}: the http adapter needs a url")
        self.name, self.url, self.options = spec.name, spec.url.rstrip("/"), dict(spec.options)
        self.capabilities = option_capabilities(spec, "http", turn_based=True)
        self._timeout = float(self.options.get("turn_timeout_s", 30.0))
        self._connect_timeout = float(self.options.get("connect_timeout_s", 10.0))
        self._headers = expand_headers(self.options.get("headers"))  # `${ENV}` references resolved here
        self._http: aiohttp.ClientSession | None = None
        self._sessions: OpenSessions[HttpTurnSession] = OpenSessions()

    def _client(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(headers=self._headers)
        return self._http

    async def request(
        self,
        method: str,
        url: str,
        body: dict[str, Any] | None,
        unreachable: FailureKind,
        params: dict[str, str] | None = None,
    ) -> Any:
        """One request with a deadline; every failure becomes an AgentError with a kind."""
        timeout = aiohttp.ClientTimeout(total=self._timeout, sock_connect=self._connect_timeout)
        try:
            async with self._client().request(method, url, json=body, params=params, timeout=timeout) as resp:
                text = await resp.text()
                if resp.status == 429:  # the vendor's rate limit: the harness waits and calls again
                    raise RateLimited(
                        f"{method} {url}: HTTP 429 {text[:200]}".strip(),
                        retry_after_seconds(resp.headers.get("Retry-After")),
                        source="http_429",
                    )
                if resp.status >= 400:
                    raise _status_error(resp.status, text)
                if resp.status == 204 or not text:
                    return None
                try:
                    return json.loads(text)
                except json.JSONDecodeError as exc:
                    raise AgentError("malformed_frame", f"{method} {url}: invalid JSON ({exc})") from None
        except TimeoutError:
            raise AgentError(
                "timeout_turn", f"{method} {url}: no answer within {self._timeout:.1f} s"
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise AgentError(unreachable, f"{method} {url}: {exc}") from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            raise AgentError("disconnect", f"{method} {url}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise AgentError("http_error", f"{method} {url}: {type(exc).__name__}: {exc}") from None

    async def connect(self, call: CallInfo) -> HttpTurnSession:
        body = session_request(call, self.capabilities.input_format)
        data = await self.request("POST", f"{self.url}/sessions", body, "connect_failed")
        if not isinstance(data, dict) or not isinstance(data.get("session_id"), str):
            raise AgentError("malformed_frame", "session creation answered without a 'session_id'")
        caps = declared_exposure(self.capabilities, data.get("exposes"))
        session = HttpTurnSession(self, data["session_id"], self.capabilities.input_format, caps)
        await session.deliver(parse_events(data))
        return self._sessions.add(session)

    async def aclose(self) -> None:
        await self._sessions.close_all()
        if self._http is not None:
            await self._http.close()
            await asyncio.sleep(0)


def _status_error(status: int, text: str) -> AgentError:
    message = text[:300]
    try:
        err = json.loads(text).get("error") or {}
        message = f"{err.get('kind', '')}: {err.get('message', '')}".strip(": ")
    except (json.JSONDecodeError, AttributeError):
        pass
    kind: FailureKind
    if status == 504:
        kind = "timeout_turn"
    elif status >= 500:
        kind = "http_error"
    else:
        kind = "protocol_error"
    return AgentError(kind, f"HTTP {status}: {message}")


def http_adapter(spec: AgentSpec) -> HttpTurnAdapter:
    return HttpTurnAdapter(spec)
