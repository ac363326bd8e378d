"""The OpenAI-compatible client against a loopback stand-in endpoint: body, key handling, errors."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from voice_audit.harness.llm import (
    ChatRequest,
    LLMError,
    Message,
    OpenAIChatClient,
    Tool,
    parse_response,
    request_body,
)

KEY = "sk-test-4f9a1c0ffee-secret"


def _req(**kw: Any) -> ChatRequest:
    return ChatRequest(messages=(Message(role="user", content="hi"),), **kw)


def test_request_body_is_deterministic_and_structured() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    tool = Tool(name="lookup", description="d", parameters={"type": "object", "properties": {}})
    body = request_body("m", _req(json_schema=schema, tools=(tool,), tool_choice="lookup", stop=("\n",)))
    assert body["temperature"] == 0.0 and body["seed"] == 0 and body["model"] == "m"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": True},
    }
    assert body["tools"][0]["function"]["name"] == "lookup"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert body["stop"] == ["\n"]
    assert request_body("m", _req(json_schema=schema), "json_object")["response_format"] == {
        "type": "json_object",
        "schema": schema,
    }
    assert "response_format" not in request_body("m", _req(json_schema=schema), "none")


def test_parse_response_reads_content_and_tool_calls() -> None:
    r = parse_response(
        {
            "model": "m",
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {
                        "content": None,
                        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"x": 1}'}}],
                    },
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
    )
    assert r.content is None and r.tool_calls[0].name == "f" and r.tool_calls[0].arguments == {"x": 1}
    assert r.usage.completion_tokens == 2 and r.finish_reason == "tool_calls"
    for bad in [
        {},
        {"choices": []},
        {"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}}]},
    ]:
        with pytest.raises(LLMError) as exc:
            parse_response(bad)
        assert exc.value.kind == "llm_bad_response"


class Endpoint:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.status = 200

    async def handle(self, request: web.Request) -> web.Response:
        self.auth.append(request.headers.get("Authorization"))
        self.bodies.append(await request.json())
        if self.status != 200:
            # a misbehaving server that echoes the credential back
            return web.Response(status=self.status, text=f"bad key {request.headers.get('Authorization')}")
        return web.json_response(
            {"model": "m", "choices": [{"message": {"content": '{"ok": true}'}, "finish_reason": "stop"}]}
        )


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[Endpoint, str]]:
    ep = Endpoint()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", ep.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield ep, f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


async def test_key_from_the_named_variable_is_sent_and_never_shown(
    endpoint: tuple[Endpoint, str], caplog: pytest.LogCaptureFixture
) -> None:
    ep, url = endpoint
    caplog.set_level(logging.DEBUG)
    client = OpenAIChatClient(url, "m", api_key_env="READER_KEY", environ={"READER_KEY": KEY})
    try:
        r = await client.chat(_req())
        assert json.loads(r.content or "") == {"ok": True}
        assert ep.auth == [f"Bearer {KEY}"]
        assert KEY not in repr(client) and KEY not in json.dumps(ep.bodies)
        ep.status = 401
        with pytest.raises(LLMError) as exc:
            await client.chat(_req())
        assert exc.value.kind == "llm_http_error" and "401" in str(exc.value)
        assert KEY not in str(exc.value) and "[redacted]" in str(exc.value)
    finally:
        await client.close()
    assert KEY not in caplog.text


def test_a_missing_key_variable_is_one_clear_error() -> None:
    with pytest.raises(LLMError, match="READER_KEY"):
        OpenAIChatClient("http://127.0.0.1:9/v1", "m", api_key_env="READER_KEY", environ={})


async def test_unreachable_endpoint_is_machine_readable() -> None:
    client = OpenAIChatClient("http://127.0.0.1:9/v1", "m", timeout_s=5)
    try:
        with pytest.raises(LLMError) as exc:
            await client.chat(_req())
        assert exc.value.kind == "llm_unreachable"
    finally:
        await client.close()
