"""`voice-audit agents serve NAME --protocol P`: put any registered agent behind a protocol front end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer

from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.server import PROTOCOLS, Protocol, serve, tls_context
from voice_audit.harness.adapter import AgentAdapter, CallInfo
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.registry import AGENT_GROUP, load_object
from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, ScenarioLibrary

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Serve bundled or third-party agents over a protocol."
)


@app.callback()
def _group() -> None:
    """Serve bundled or third-party agents over a protocol."""


def _options(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--option needs KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def build_adapter(name: str, options: dict[str, Any]) -> AgentAdapter:
    """NAME is an entry point of `voice_audit.agents` or `module:attr`: a factory or an adapter."""
    obj = load_object(name, AGENT_GROUP)
    if hasattr(obj, "connect") and hasattr(obj, "capabilities"):
        adapter: AgentAdapter = obj
        return adapter
    safe = re.sub(r"[^a-z0-9_-]", "-", name.lower().split(":")[-1]).strip("-") or "agent"
    if not safe[0].isalpha():
        safe = "a" + safe
    return obj(AgentSpec(name=safe, adapter=name, options=options))


def default_call(scenario_id: str) -> CallInfo:
    found = ScenarioLibrary(BUNDLED_LIBRARY).load_all()
    if scenario_id not in found:
        raise ConfigError(f"unknown scenario {scenario_id!r} (known: {', '.join(sorted(found))})")
    return CallInfo(facts=found[scenario_id][1].facts, scenario_id=scenario_id)


@app.command("serve")
def serve_cmd(
    name: Annotated[str, typer.Argument(help="agent entry point name or module:attr")],
    protocol: Annotated[str, typer.Option(help="|".join(PROTOCOLS))] = "twilio",
    host: Annotated[str, typer.Option(help="bind address (loopback by default)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 7860,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="agent option KEY=VALUE (JSON values)")
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option(
            help="facts for calls whose client sends none (Twilio bots, plain Realtime or Live clients)"
        ),
    ] = None,
    greeting_timeout: Annotated[float, typer.Option(help="seconds to wait for a greeting")] = 5.0,
    loop: Annotated[
        str,
        typer.Option(help="event loop: auto (uvloop when installed, the `fast` extra), uvloop or asyncio"),
    ] = "auto",
    tls_cert: Annotated[
        Path | None,
        typer.Option(
            help="PEM certificate (chain): serve wss:// or https:// (clients that dial only TLS, e.g. the Gemini SDK)"
        ),
    ] = None,
    tls_key: Annotated[Path | None, typer.Option(help="PEM private key of --tls-cert")] = None,
) -> None:
    """Serve NAME over one protocol until interrupted."""
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unknown protocol {protocol!r} (one of {', '.join(PROTOCOLS)})")
    if (tls_cert is None) != (tls_key is None):
        raise ConfigError(
            "--tls-cert and --tls-key go together: give both, or neither for plain ws:// / http://"
        )
    if tls_cert is not None and protocol == "sip":
        raise ConfigError("--tls-cert is for the WebSocket and HTTP protocols; sip takes no certificate")
    try:
        tls = tls_context(str(tls_cert), str(tls_key)) if tls_cert is not None else None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    adapter = build_adapter(name, _options(option or []))
    call = default_call(scenario) if scenario else None
    config = ServeConfig(greeting_timeout_s=greeting_timeout, default_call=(lambda: call) if call else None)
    proto: Protocol = protocol
    with contextlib.suppress(KeyboardInterrupt):
        run_loop(serve(adapter, proto, host, port, config, tls), loop)


def run_loop(main: Coroutine[Any, Any, None], loop: str = "auto") -> None:
    """Run a server on uvloop when it is installed (or asked for), else on asyncio's own loop.

    A served agent spends most of its CPU in the event loop's socket and timer handling (one
    WebSocket message per call every 20 ms); uvloop does that in C and leaves more of a shared
    machine to the calls themselves. Behaviour is the same on either loop.
    """
    if loop not in ("auto", "uvloop", "asyncio"):
        main.close()
        raise ConfigError(f"unknown event loop {loop!r} (auto, uvloop or asyncio)")
    if loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            if loop == "uvloop":
                main.close()
                raise ConfigError("uvloop is not installed: pip install 'voice-audit[fast]'") from None
        else:
            uvloop.run(main)
            return
    asyncio.run(main)
