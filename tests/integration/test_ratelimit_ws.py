"""A WebSocket agent whose vendor refuses the handshake with HTTP 429 and Retry-After: the adapter's
connect raises `RateLimited` with the wait (a harness-side wait, never `connect_failed`), and a
refusal for any other reason stays `connect_failed`."""

from __future__ import annotations

import asyncio
from http import HTTPStatus

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from voice_audit.agents.protocols._stream import open_ws
from voice_audit.harness.adapter import AgentError, RateLimited


async def _refusing(status: HTTPStatus, headers: dict[str, str]) -> AgentError:
    def refuse(connection: ServerConnection, request: Request) -> Response:
        return Response(status.value, status.phrase, Headers(headers), b"busy\n")

    async def handler(ws: ServerConnection) -> None:
        await ws.close()

    async with serve(handler, "127.0.0.1", 0, process_request=refuse) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        with pytest.raises(AgentError) as err:
            await open_ws(f"ws://127.0.0.1:{port}/v1/realtime", timeout_s=5.0)
    return err.value


def test_a_429_handshake_is_a_rate_limit_with_its_retry_after() -> None:
    err = asyncio.run(_refusing(HTTPStatus.TOO_MANY_REQUESTS, {"Retry-After": "3", "Content-Length": "5"}))
    assert isinstance(err, RateLimited) and err.kind == "rate_limited"
    assert err.retry_after_s == 3.0 and err.source == "ws_handshake_429"


def test_other_refusals_stay_connect_failed() -> None:
    err = asyncio.run(_refusing(HTTPStatus.FORBIDDEN, {"Content-Length": "5"}))
    assert not isinstance(err, RateLimited) and err.kind == "connect_failed"
