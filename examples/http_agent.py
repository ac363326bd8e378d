"""A minimal agent behind the HTTP turn API (the contract in `voice_audit.agents.protocols.http_turn`), aiohttp only.

Run: `python -m examples.http_agent 8080`; campaign: `agents: [{name: mine, adapter: http,
url: "http://127.0.0.1:8080"}]`. Each caller turn is one POST; the answer's events end in
`turn_end` (the caller may speak) or `hangup` (the call is over). Audio is base64 pcm16.
"""

from __future__ import annotations

import base64
import sys
import uuid
from typing import Any

from aiohttp import web

from examples._voice import DONE, LINES, RATE, remedy, say

EXPOSES = {"transcripts": True, "tool_trace": True}  # undeclared would be recorded as not exposed


def _speak(text: str, end: dict[str, Any]) -> list[dict[str, Any]]:
    audio = base64.b64encode(say(text)).decode()
    return [
        {"type": "text", "text": text},
        {"type": "audio", "audio": audio, "sample_rate": RATE, "encoding": "pcm16"},
        end,
    ]


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"error": {"kind": kind, "message": message}}, status=status)


async def create(request: web.Request) -> web.Response:
    call = (await request.json())["call"]
    if call.get("facts") is None:  # the campaign disclosed no facts and this agent has none of its own
        return _error(422, "protocol_error", "this agent needs the facts (facts_disclosure: full)")
    sid = uuid.uuid4().hex
    request.app["sessions"][sid] = {"call": call, "turn": 0}
    events = [{"type": "facts_seen", "sha256": call["facts_sha256"]}, *_speak(LINES[0], {"type": "turn_end"})]
    return web.json_response({"session_id": sid, "events": events, "exposes": EXPOSES}, status=201)


async def turn(request: web.Request) -> web.Response:
    session = request.app["sessions"].get(request.match_info["sid"])
    if session is None:
        return _error(404, "protocol_error", "unknown session")
    await request.json()  # {"audio": <b64 caller turn>, ...}: a real agent recognises it here
    session["turn"] += 1
    if session["turn"] < len(LINES):
        return web.json_response({"events": _speak(LINES[session["turn"]], {"type": "turn_end"})})
    events: list[dict[str, Any]] = []
    found = remedy(session["call"]["facts"])
    if found:  # this agent's own backend would act here; it reports the call and its result
        name, args = found
        events += [
            {"type": "tool_call", "call_id": "t1", "name": name, "arguments": args},
            {
                "type": "tool_result",
                "call_id": "t1",
                "name": name,
                "ok": True,
                "result_keys": ["status"],
                "error": None,
            },
        ]
    return web.json_response({"events": events + _speak(DONE, {"type": "hangup", "reason": "done"})})


async def delete(request: web.Request) -> web.Response:
    request.app["sessions"].pop(request.match_info["sid"], None)  # sent once per call, whoever ended it
    return web.Response(status=204)


def app() -> web.Application:
    application = web.Application()
    application["sessions"] = {}
    application.add_routes(
        [
            web.post("/sessions", create),
            web.post("/sessions/{sid}/turns", turn),
            web.delete("/sessions/{sid}", delete),
        ]
    )
    return application


if __name__ == "__main__":
    web.run_app(app(), host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8080)
