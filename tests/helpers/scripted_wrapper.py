"""The shell of the test agents that wrap the scripted agent (a trap, a gate, a slow warm-up): the
scripted agent built from the spec without the wrapper's own options, its name and capabilities,
and a hook each wrapper fills before a call connects."""

from __future__ import annotations

from typing import Any

from voice_audit.harness.adapter import AgentSession, CallInfo
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.registry import AGENT_GROUP, load_object


class ScriptedWrapper:
    def __init__(self, spec: AgentSpec, own_options: tuple[str, ...]) -> None:
        inner_opts = {k: v for k, v in dict(spec.options).items() if k not in own_options}
        self.inner: Any = load_object("scripted", AGENT_GROUP)(
            spec.model_copy(update={"adapter": "scripted", "options": inner_opts})
        )
        self.name = spec.name
        self.capabilities = self.inner.capabilities

    async def before_connect(self, call: CallInfo) -> None:
        """What the wrapper does before the scripted agent takes `call` (nothing by default)."""

    async def connect(self, call: CallInfo) -> AgentSession:
        await self.before_connect(call)
        session: AgentSession = await self.inner.connect(call)
        return session

    async def aclose(self) -> None:
        await self.inner.aclose()
