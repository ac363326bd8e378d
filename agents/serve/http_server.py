"""HTTP turn API front end (aiohttp): serves a turn-based agent with the contract documented in
`voice_audit.agents.protocols.http_turn` (statuses and error bodies included). One lock per session keeps
turns of a call strictly sequential; the session reply declares the inner agent's exposure."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from voice_audit.agents.protocols.event_json import b64decode, event_to_json
from voice_audit.agents.protocols.http_wire import (
    error_body,
    events_reply,
    read_session_request,
    read_turn_format,
    session_reply,
)
from voice_audit.agents.serve._inner import InnerCall
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.faults import BAD_AUDIO_B64, WireFault, wire_fault
from voice_audit.harness.adapter import AgentAdapter, AgentError, AgentEvent, HangupOut
from voice_audit.harness.model.failures import FailureKind

__all__ = ["build_http_app"]

ENDED_KEPT = 10_000
"""How many agent-ended session ids a server remembers so the client's DELETE still gets a 204."""

log = logging.getLogger(__name__)


@dataclass
class _Served:
    sid: str
    inner: InnerCall
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class _Faulted(Exception):
    """The served agent asked for a wire fault (see `voice_audit.agents.serve.faults`); the middleware does it."""

    def __init__(self, sid: str, fault: WireFault) -> None:
        super().__init__(fault.action)
        self.sid, self.fault = sid, fault


def _fault_response(request: web.Request, fault: WireFault) -> web.StreamResponse:
    if fault.action == "drop":
        if request.transport is not None:
            request.transport.abort()
        return web.Response(status=500)  # never delivered: the connection is gone
    if fault.action == "status":
        return web.Response(status=fault.status, text="Service Unavailable")
    if fault.action == "bad_audio":
        bad = {"type": "audio", "audio": BAD_AUDIO_B64, "sample_rate": 16000, "encoding": "opus"}
        return web.json_response({"events": [bad, {"type": "turn_end", "compute_ms": 0.0}]})
    body = fault.payload.encode() if isinstance(fault.payload, str) else fault.payload
    return web.Response(body=body, status=200, content_type="application/json")


def _error(status: int, kind: FailureKind, message: str) -> web.Response:
    return web.json_response(error_body(kind, message), status=status)


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise AgentError("malformed_frame", "request body is not JSON") from None
    if not isinstance(body, dict):
        raise AgentError("malformed_frame", "request body is not a JSON object")
    return body


def build_http_app(adapter: AgentAdapter, config: ServeConfig) -> web.Application:
    sessions: dict[str, _Served] = {}
    ended: OrderedDict[str, None] = OrderedDict()  # sessions the agent ended: their DELETE is still a 204

    async def collect(served: _Served, first_timeout: float | None) -> tuple[list[dict[str, Any]], bool]:
        events: list[dict[str, Any]] = []

        async def add(ev: AgentEvent) -> None:
            fault = wire_fault(ev)
            if fault is not None and fault.action == "no_marks":
                return  # the turn API has no marks
            if fault is not None and fault.action != "flood":  # a flood needs a stream; send the error
                raise _Faulted(served.sid, fault)
            events.append(event_to_json(ev))

        status = await served.inner.run_turn(add, first_timeout)
        if status == "ended" and not any(e["type"] in ("hangup", "error") for e in events):
            events.append(event_to_json(HangupOut("agent session ended")))
        return events, status in ("hangup", "error", "ended")

    async def finish(sid: str, reason: str) -> None:
        served = sessions.pop(sid, None)
        if served is not None:
            ended[sid] = None
            while len(ended) > ENDED_KEPT:
                ended.popitem(last=False)
            await served.inner.close(reason)

    @web.middleware
    async def errors(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            resp: web.StreamResponse = await handler(request)
            return resp
        except _Faulted as f:
            await finish(f.sid, f"wire fault: {f.fault.action}")
            return _fault_response(request, f.fault)
        except AgentError as exc:
            status = {"malformed_frame": 400, "protocol_error": 422}.get(exc.kind, 502)
            return _error(status, exc.kind, exc.message)
        except TimeoutError:
            return _error(
                504, "timeout_turn", f"agent did not finish its turn within {config.turn_timeout_s:.0f} s"
            )

    async def create(request: web.Request) -> web.Response:
        body = await _json(request)
        call, _ = read_session_request(body, config.default_call)
        try:
            inner = await InnerCall.open(adapter, call, config.turn_timeout_s)
        except AgentError as exc:
            return _error(502, exc.kind, exc.message)
        sid = secrets.token_hex(12)
        served = sessions[sid] = _Served(sid, inner)
        async with served.lock:
            events, over = await collect(served, config.greeting_timeout_s)
        if over:
            await finish(sid, "agent ended the call during its greeting")
        return web.json_response(session_reply(sid, events, adapter.capabilities), status=201)

    def lookup(request: web.Request) -> _Served:
        served = sessions.get(request.match_info["sid"])
        if served is None:
            raise web.HTTPNotFound(
                text=json.dumps(error_body("protocol_error", "unknown session")),
                content_type="application/json",
            )
        return served

    async def turn(request: web.Request) -> web.Response:
        served = lookup(request)
        body = await _json(request)
        fmt = read_turn_format(body)
        audio = b64decode(body.get("audio"))
        async with served.lock:
            try:
                await served.inner.send_turn(audio, fmt)
                events, over = await collect(served, None)
            except TimeoutError:
                await finish(request.match_info["sid"], "agent turn timed out")
                raise
        if over:
            await finish(request.match_info["sid"], "agent ended the call")
        return web.json_response(events_reply(events))

    async def dtmf(request: web.Request) -> web.Response:
        served = lookup(request)
        digit = (await _json(request)).get("digit")
        if not isinstance(digit, str) or len(digit) != 1:
            raise AgentError("malformed_frame", "dtmf needs a one-character 'digit'")
        await served.inner.session.send_dtmf(digit)
        return web.Response(status=204)

    async def barge_in(request: web.Request) -> web.Response:
        served = lookup(request)
        played = (await _json(request)).get("played_ms")
        if not isinstance(played, int | float):
            raise AgentError("malformed_frame", "barge_in needs a numeric 'played_ms'")
        await served.inner.session.barge_in(int(played))
        return web.Response(status=204)

    async def delete(request: web.Request) -> web.Response:
        sid = request.match_info["sid"]
        if sid in ended:  # the agent ended it already
            del ended[sid]
            return web.Response(status=204)
        lookup(request)
        await finish(sid, request.query.get("reason", "caller hung up"))
        ended.pop(sid, None)
        return web.Response(status=204)

    async def on_cleanup(app: web.Application) -> None:
        for sid in list(sessions):
            await finish(sid, "server shutting down")

    app = web.Application(middlewares=[errors], client_max_size=64 * 2**20)
    app.add_routes(
        [
            web.post("/sessions", create),
            web.post("/sessions/{sid}/turns", turn),
            web.post("/sessions/{sid}/dtmf", dtmf),
            web.post("/sessions/{sid}/barge_in", barge_in),
            web.delete("/sessions/{sid}", delete),
        ]
    )
    app.on_cleanup.append(on_cleanup)
    return app
