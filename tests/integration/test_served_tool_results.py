"""A served agent never claims a tool result it did not get, on every protocol whose app sends them.

Two served protocols let the app run the agent's tools and send the results back: OpenAI Realtime
(`function_call_output`) and Gemini Live (`toolResponse`; driven by the official SDK over TLS in
`test_gemini_live_app.py`). Here the hybrid reference agent is served over Realtime on 127.0.0.1;
the app types its caller turns (user `input_text` items), declares `issue_refund` and answers it:
an error result is reported as a failure, a success with the app's refund id as done, and a call the
caller talks over before the app answered fails too. The other served protocols (ws, http, twilio,
webrtc, sip) have no message for an app's tool result: their agents' tools are their own.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from voice_audit.agents.reference import HybridAgent
from voice_audit.agents.serve import ServeConfig, start_server
from voice_audit.harness.adapter import CallInfo
from voice_audit.harness.tools import TOOL_SCHEMAS
from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

pytestmark = [pytest.mark.slow]

SCEN = load_scenario_file(Path(BUNDLED_LIBRARY) / "refund_duplicate_charge.yaml")
TYPED = [
    "I was charged twice for my subscription.",
    "My name is Jordan Avery Lee.",
    "I was born on the fourth of March, nineteen eighty eight.",
    "It is the duplicate charge.",
    "Yes, please go ahead.",
]


async def _send(ws: ClientConnection, **event: Any) -> None:
    await ws.send(json.dumps(event))


async def _response(ws: ClientConnection) -> tuple[str, list[dict[str, Any]]]:
    """One response, to its `response.done`: what the agent said and the function calls it made."""
    said, calls = "", []
    async for raw in ws:
        ev = json.loads(raw)
        if ev["type"] == "response.output_audio_transcript.delta":
            said += ev["delta"]
        elif ev["type"] == "response.function_call_arguments.done":
            calls.append(ev)
        elif ev["type"] == "error":
            raise AssertionError(ev)
        elif ev["type"] == "response.done":
            return said, calls
    return said, calls  # the agent hung up


async def _call(output: dict[str, Any] | None) -> tuple[list[str], list[dict[str, Any]]]:
    """The typed refund dialogue; the app answers `issue_refund` with `output` (None: the caller
    speaks again, typed, before any answer)."""
    call = CallInfo(facts=SCEN.facts, scenario_id=SCEN.id)
    config = ServeConfig(greeting_timeout_s=10.0, default_call=lambda: call)
    said: list[str] = []
    calls: list[dict[str, Any]] = []
    async with (
        start_server(HybridAgent({}), "realtime", config=config) as handle,
        asyncio.timeout(120),
        connect(handle.url) as ws,
    ):
        tool = {"type": "function", "name": "issue_refund", **TOOL_SCHEMAS["issue_refund"]}
        await _send(ws, type="session.update", session={"type": "realtime", "tools": [tool]})
        said.append((await _response(ws))[0])  # the greeting
        for text in TYPED:
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
            await _send(ws, type="conversation.item.create", item=item)
            await _send(ws, type="response.create")
            words, made = await _response(ws)
            said.append(words)
            calls += made
            if made:
                break
        assert calls, said
        if output is not None:
            fco = {
                "type": "function_call_output",
                "call_id": calls[0]["call_id"],
                "output": json.dumps(output),
            }
            await _send(ws, type="conversation.item.create", item=fco)
        else:
            item = {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Hello?"}],
            }
            await _send(ws, type="conversation.item.create", item=item)
        await _send(ws, type="response.create")
        said.append((await _response(ws))[0])
    return said, calls


def test_an_error_result_from_the_app_is_reported_as_a_failure() -> None:
    said, calls = asyncio.run(_call({"ok": False, "error": "card processor unavailable"}))
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [("issue_refund", {"amount": "24.99"})]
    assert "wasn't able to complete" in said[-1], said
    assert "issued" not in " ".join(said).lower(), said


def test_a_success_result_from_the_app_is_reported_as_done() -> None:
    said, _calls = asyncio.run(_call({"ok": True, "result": {"refund_id": "APP-1"}}))
    assert "I have issued a refund" in said[-1], said


def test_a_call_the_app_never_answered_is_not_claimed() -> None:
    said, _calls = asyncio.run(_call(None))
    assert "issued" not in " ".join(said).lower(), said
