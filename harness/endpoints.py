"""Agent endpoints: is each agent URL well-formed, and does anything answer at it?

Checked before a run places its first call (and by `voice-audit plan --check-agents`), so an agent
that is down or misspelt stops the run with one line naming it, instead of a campaign of failed calls.
The probe opens a TCP connection to the URL's host and port and closes it: enough to tell
"nothing listens there" (refused, unknown host, no route, silence) from a server that answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.model.secrets import mask_url

DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443, "ws": 80, "wss": 443}
DEFAULT_URLS: dict[str, str] = {
    "gemini-live": "wss://generativelanguage.googleapis.com/ws/"
    "google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent",
}
"""Where an adapter with a vendor's public endpoint calls when the campaign gives no `url`."""
PROBE_TIMEOUT_S = 5.0
SCHEME_ADAPTERS: dict[str, str] = {"sip": "sip", "sips": "sip"}
"""URL schemes whose adapter reads and probes its URLs itself (`url_problem` and an async `probe`
on its registered factory): a SIP URI is no scheme://host URL, and a SIP server is pinged with
OPTIONS, not a TCP connection."""


def _scheme_hook(url: str, name: str) -> Any:
    """The `name` function of the adapter that owns `url`'s scheme, or None."""
    adapter = SCHEME_ADAPTERS.get(url.partition(":")[0].lower())
    if adapter is None:
        return None
    from voice_audit.harness.registry import AGENT_GROUP, load_object

    return getattr(load_object(adapter, AGENT_GROUP), name, None)


def url_problem(url: str) -> str | None:
    """Why `url` cannot name an agent endpoint, or None when it can."""
    hook = _scheme_hook(url, "url_problem")
    if hook is not None:
        why: str | None = hook(url)
        return why
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"malformed URL ({exc})"
    if parts.scheme not in DEFAULT_PORTS:
        return (
            f"scheme '{parts.scheme}' is not one of {', '.join(DEFAULT_PORTS)}"
            if parts.scheme
            else "no scheme"
        )
    if not parts.hostname:
        return "no host"
    if port == 0:
        return "port 0"
    return None


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    return parts.hostname, parts.port or DEFAULT_PORTS[parts.scheme]


def _reason(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout_s:g} s"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    if isinstance(exc, OSError):
        known = {
            errno.ECONNREFUSED: "connection refused",
            errno.EHOSTUNREACH: "no route to host",
            errno.ENETUNREACH: "network unreachable",
        }
        return known.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return type(exc).__name__


async def probe(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the URL's host and port opens (or the scheme's own adapter's
    probe finds a server); else why not, in a few words."""
    hook = _scheme_hook(url, "probe")
    if hook is not None:
        why: str | None = await hook(url, timeout_s)
        return why
    host, port = _address(url)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, TimeoutError) as exc:
        return _reason(exc, timeout_s)
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), timeout_s)
    return None


def default_url(adapter: str) -> str | None:
    """The public endpoint an adapter calls without a `url` (None: the adapter needs one)."""
    return DEFAULT_URLS.get(adapter)


def agent_url(agent: AgentSpec) -> str | None:
    """The URL a call to `agent` goes to: its own, else its adapter's public endpoint."""
    return agent.url or default_url(agent.adapter)


def describe(agent: AgentSpec) -> str:
    """How a message names an agent: its name and its URL with credentials masked."""
    url = agent_url(agent)
    return f"agent '{agent.name}' at {mask_url(url)}" if url else f"agent '{agent.name}'"


ADAPTER_PROBES: frozenset[str] = frozenset({"webrtc"})
"""Adapters whose factory also checks the agent itself once its port answers (`probe_agent`):
a WebRTC bot's signalling path."""


async def probe_agent(agent: AgentSpec, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """`probe` of the agent's URL, then its adapter's own check where it has one."""
    why = await probe(agent_url(agent) or "", timeout_s)
    if why is None and agent.adapter in ADAPTER_PROBES:
        from voice_audit.harness.registry import AGENT_GROUP, load_object

        hook = getattr(load_object(agent.adapter, AGENT_GROUP), "probe_agent", None)
        if hook is not None:
            why = await hook(agent, timeout_s)
    return why


async def unreachable_agents(agents: Sequence[AgentSpec], timeout_s: float = PROBE_TIMEOUT_S) -> list[str]:
    """One line per agent with a URL that nothing answers at (all probed at once)."""
    with_url = [a for a in agents if (u := agent_url(a)) and url_problem(u) is None]
    reasons = await asyncio.gather(*(probe_agent(a, timeout_s) for a in with_url))
    return [
        f"cannot connect to {describe(a)} ({why})" for a, why in zip(with_url, reasons, strict=True) if why
    ]
