"""A small client for any OpenAI-compatible `/v1/chat/completions` endpoint (aiohttp).

The key is read from the environment variable the configuration names, sent only in the
`Authorization` header, and scrubbed from every error message; nothing here logs a request.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from typing import Any, Literal

import aiohttp

from voice_audit.harness.llm.types import ChatRequest, ChatResponse, LLMError, Message, ToolCall, Usage
from voice_audit.harness.model.secrets import MASK

StructuredMode = Literal["json_schema", "json_object", "none"]
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


def _message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    return out


def request_body(model: str, req: ChatRequest, structured: StructuredMode = "json_schema") -> dict[str, Any]:
    """The JSON body for one request; a pure function so its shape is tested without a server."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(m) for m in req.messages],
        "temperature": req.temperature,
        "seed": req.seed,
        "max_tokens": req.max_tokens,
    }
    if req.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in req.tools
        ]
    if req.tool_choice is not None:
        body["tool_choice"] = (
            req.tool_choice
            if req.tool_choice in ("auto", "none", "required")
            else {"type": "function", "function": {"name": req.tool_choice}}
        )
    if req.json_schema is not None and structured == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": req.schema_name, "schema": req.json_schema, "strict": True},
        }
    elif req.json_schema is not None and structured == "json_object":
        body["response_format"] = {"type": "json_object", "schema": req.json_schema}
    if req.grammar is not None:
        body["grammar"] = req.grammar
    if req.stop:
        body["stop"] = list(req.stop)
    return body


def parse_response(data: Any, elapsed_ms: float = 0.0) -> ChatResponse:
    """The first choice of a chat-completions answer; anything else is `llm_bad_response`."""
    try:
        choice = data["choices"][0]
        msg = choice["message"]
        calls: list[ToolCall] = []
        for c in msg.get("tool_calls") or ():
            fn = c["function"]
            raw = fn.get("arguments") or "{}"
            args = json.loads(raw) if isinstance(raw, str) else raw
            if not isinstance(args, dict):
                raise ValueError("tool arguments are not an object")
            calls.append(
                ToolCall(id=str(c.get("id") or f"call_{len(calls)}"), name=str(fn["name"]), arguments=args)
            )
        usage = data.get("usage") or {}
        content = msg.get("content")
        return ChatResponse(
            content=content if isinstance(content, str) else None,
            tool_calls=tuple(calls),
            finish_reason=choice.get("finish_reason"),
            model=str(data.get("model") or ""),
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                reported=bool(usage),
            ),
            elapsed_ms=elapsed_ms,
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise LLMError(
            "llm_bad_response", f"not a chat-completions answer ({type(exc).__name__}: {exc})"
        ) from None


class OpenAIChatClient:
    """One endpoint and model; `api_key_env` names the variable holding the key (none for local servers)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        timeout_s: float = 30.0,
        structured: StructuredMode = "json_schema",
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.structured: StructuredMode = structured
        self.name = f"openai:{model}"
        self._key: str | None = None
        if api_key_env:
            key = env.get(api_key_env)
            if not key:
                raise LLMError(
                    "llm_unreachable", f"environment variable {api_key_env} (the model's API key) is not set"
                )
            self._key = key
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAIChatClient(base_url={self.base_url!r}, model={self.model!r})"

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, MASK) if self._key else text

    async def _client(self) -> aiohttp.ClientSession:
        """One session per event loop: a session is bound to the loop it was made in."""
        loop = asyncio.get_running_loop()
        if self._session is not None and self._loop is not loop:
            self._session = None
        if self._session is None or self._session.closed:
            self._loop = loop
            headers = {"Content-Type": "application/json"}
            if self._key:
                headers["Authorization"] = f"Bearer {self._key}"
            self._session = aiohttp.ClientSession(
                headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout_s)
            )
        return self._session

    async def chat(self, req: ChatRequest) -> ChatResponse:
        body = request_body(self.model, req, self.structured)
        url = f"{self.base_url}/chat/completions"
        session = await self._client()
        start = time.perf_counter()
        try:
            async with session.post(url, json=body) as resp:
                raw = await resp.content.read(MAX_RESPONSE_BYTES + 1)
                if resp.status >= 400:
                    snippet = self._scrub(raw[:300].decode("utf-8", "replace"))
                    raise LLMError("llm_http_error", f"{url} answered HTTP {resp.status}: {snippet}")
        except TimeoutError:
            raise LLMError("llm_timeout", f"{url} did not answer within {self.timeout_s} s") from None
        except aiohttp.ClientError as exc:
            raise LLMError("llm_unreachable", self._scrub(f"{url}: {type(exc).__name__}: {exc}")) from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise LLMError("llm_bad_response", f"{url} answered more than {MAX_RESPONSE_BYTES} bytes")
        try:
            data = json.loads(raw)
        except ValueError:
            raise LLMError("llm_bad_response", f"{url} answered something that is not JSON") from None
        return parse_response(data, (time.perf_counter() - start) * 1000.0)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> OpenAIChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def wait_ready(base_url: str, timeout_s: float = 60.0, api_key: str | None = None) -> None:
    """Poll `GET /models` until the server answers: for servers started next to a run or a test."""
    deadline = time.monotonic() + timeout_s
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2.0), headers=headers) as s:
        while True:
            try:
                async with s.get(f"{base_url.rstrip('/')}/models") as r:
                    if r.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise LLMError("llm_unreachable", f"{base_url} did not come up within {timeout_s} s")
            await asyncio.sleep(0.2)
