"""Start a front end: any in-process turn-based agent, reachable over one protocol on loopback."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aiohttp import web
from websockets.asyncio.server import serve as ws_serve

from voice_audit.agents.protocols import install_log_redaction
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.gemini_live_server import gemini_live_handler
from voice_audit.agents.serve.http_server import build_http_app
from voice_audit.agents.serve.realtime_server import realtime_handler
from voice_audit.agents.serve.twilio_server import twilio_handler
from voice_audit.agents.serve.ws_server import ws_handler
from voice_audit.harness.adapter import AgentAdapter

__all__ = ["PROTOCOLS", "Protocol", "ServerHandle", "serve", "start_server", "tls_context"]

log = logging.getLogger(__name__)

Protocol = Literal["http", "ws", "twilio", "realtime", "gemini-live", "sip", "webrtc"]
PROTOCOLS: tuple[Protocol, ...] = ("http", "ws", "twilio", "realtime", "gemini-live", "sip", "webrtc")
_PATHS = {
    "http": "",
    "ws": "/ws",
    "twilio": "/ws",
    "realtime": "/v1/realtime",
    "gemini-live": "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
    "sip": "",
    "webrtc": "",
}


@dataclass(frozen=True)
class ServerHandle:
    protocol: Protocol
    host: str
    port: int
    tls: bool = False

    @property
    def url(self) -> str:
        if self.protocol == "sip":
            return f"sip:agent@{self.host}:{self.port}"
        scheme = "http" if self.protocol in ("http", "webrtc") else "ws"
        return f"{scheme}{'s' if self.tls else ''}://{self.host}:{self.port}{_PATHS[self.protocol]}"


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    """A server TLS context from a PEM certificate chain and its private key (clients that dial only
    `wss://` or `https://`, as the official Gemini SDK does, connect directly). Raises ValueError
    with a one-line reason when either file cannot be used."""
    for what, path in (("certificate", cert), ("key", key)):
        if not Path(path).is_file():
            raise ValueError(f"TLS {what} file not found: {path} (give the PEM file's path)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise ValueError(
            f"cannot use TLS certificate {cert} with key {key}: {exc} (give a PEM certificate and its own key)"
        ) from None
    return ctx


@asynccontextmanager
async def start_server(
    adapter: AgentAdapter,
    protocol: Protocol,
    host: str = "127.0.0.1",
    port: int = 0,
    config: ServeConfig | None = None,
    tls: ssl.SSLContext | None = None,
) -> AsyncIterator[ServerHandle]:
    """Serve until the block exits; port 0 picks a free port (see `handle.port`). WebSocket front
    ends accept any path, so `ws://host:port/ws` (Pipecat's default) and `/v1/realtime` both work.
    With `tls` (`tls_context`) they serve `wss://` / `https://` instead."""
    cfg = config or ServeConfig()
    install_log_redaction()  # clients' credentials arrive in handshake headers that websockets logs
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r} (one of {', '.join(PROTOCOLS)})")
    if protocol == "sip" and tls is not None:
        raise ValueError("TLS is for the WebSocket and HTTP front ends; sip takes no certificate")
    secure = tls is not None
    if protocol == "sip":  # PJSUA2 (the `sip` extra), imported only when asked for
        from voice_audit.agents.serve.sip_server import start_sip_server

        async with start_sip_server(adapter, host, port, cfg) as bound:
            yield ServerHandle(protocol, host, bound)
        return
    if protocol in ("http", "webrtc"):
        if protocol == "webrtc":  # aiortc (the `webrtc` extra), imported only when asked for
            from voice_audit.agents.serve.webrtc_server import build_webrtc_app

            app = build_webrtc_app(adapter, cfg, loopback=host in ("127.0.0.1", "localhost", "::1"))
        else:
            app = build_http_app(adapter, cfg)
        # A client that gave up on a turn (its own timeout) cancels that turn's handler here.
        runner = web.AppRunner(app, handle_signals=False, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        await site.start()
        bound = runner.addresses[0][1]
        try:
            yield ServerHandle(protocol, host, bound, secure)
        finally:
            await runner.cleanup()
        return
    handler = {
        "ws": ws_handler,
        "twilio": twilio_handler,
        "realtime": realtime_handler,
        "gemini-live": gemini_live_handler,
    }[protocol](adapter, cfg)
    async with ws_serve(handler, host, port, max_size=32 * 2**20, ssl=tls) as server:
        bound = next(iter(server.sockets)).getsockname()[1]
        try:
            yield ServerHandle(protocol, host, bound, secure)
        finally:
            server.close()
            try:
                async with asyncio.timeout(5):
                    await server.wait_closed()
            except TimeoutError:
                log.warning("connections still open after 5 s at shutdown")


async def serve(
    adapter: AgentAdapter,
    protocol: Protocol,
    host: str = "127.0.0.1",
    port: int = 0,
    config: ServeConfig | None = None,
    tls: ssl.SSLContext | None = None,
) -> None:
    """Serve forever (until cancelled)."""
    async with start_server(adapter, protocol, host, port, config, tls) as handle:
        log.info("serving %s on %s", adapter.name, handle.url)
        print(f"serving {adapter.name} over {protocol} at {handle.url}", flush=True)
        await asyncio.Event().wait()
