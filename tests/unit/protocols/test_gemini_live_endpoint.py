"""Where a gemini-live agent is called, and `plan --check-agents` probing it: the campaign's url, else
the Live API's public endpoint (the probe's target, never contacted here)."""

from __future__ import annotations

import asyncio
import socket

from voice_audit.harness.endpoints import DEFAULT_URLS, agent_url, describe, unreachable_agents
from voice_audit.harness.model.campaign import AgentSpec


def test_a_live_agent_without_url_is_the_public_endpoint() -> None:
    public = AgentSpec(name="g", adapter="gemini-live")
    assert agent_url(public) == DEFAULT_URLS["gemini-live"]
    assert describe(public) == f"agent 'g' at {DEFAULT_URLS['gemini-live']}"
    local = AgentSpec(name="g", adapter="gemini-live", url="ws://127.0.0.1:9/ws")
    assert agent_url(local) == "ws://127.0.0.1:9/ws"
    assert agent_url(AgentSpec(name="h", adapter="hybrid")) is None  # in process: nothing to probe


def test_check_agents_probes_a_live_agents_url() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])  # released below: nobody listens there
    lines = asyncio.run(
        unreachable_agents([AgentSpec(name="g", adapter="gemini-live", url=f"ws://127.0.0.1:{port}/ws")])
    )
    assert len(lines) == 1 and f"agent 'g' at ws://127.0.0.1:{port}/ws" in lines[0] and "refused" in lines[0]

    async def listening() -> list[str]:
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        bound = server.sockets[0].getsockname()[1]
        async with server:
            return await unreachable_agents(
                [AgentSpec(name="g", adapter="gemini-live", url=f"ws://127.0.0.1:{bound}/ws")]
            )

    assert asyncio.run(listening()) == []
