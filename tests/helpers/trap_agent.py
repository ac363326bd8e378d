"""The scripted agent behind a trap or a gate, to leave calls undelivered on a node a test removes.

`trapped` options: `trap` and `release` (files). While `trap` exists, each call's first connect in a process
fails (a retryable `connect_failed`, so its attempt ends and writes its usage line) and every later
connect waits until `release` exists: the episode stays unfinished on its node, with one attempt's
usage line written and no record. Without `trap` (or once released) calls run as the scripted
agent's do.

`gated` options: `allow` (a count) and `release` (a file). The first `allow` calls a process
connects run as the scripted agent's do; every later connect waits until `release` exists, so a
node holding the rest of its shard is known to have calls undelivered when the test removes it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from voice_audit.harness.adapter import AgentSession, CallInfo
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.registry import AGENT_GROUP, load_object

OWN_OPTIONS = ("trap", "release", "allow")


def _scripted(spec: AgentSpec) -> Any:
    inner_opts = {k: v for k, v in dict(spec.options).items() if k not in OWN_OPTIONS}
    return load_object("scripted", AGENT_GROUP)(
        spec.model_copy(update={"adapter": "scripted", "options": inner_opts})
    )


class TrapAdapter:
    def __init__(self, spec: AgentSpec) -> None:
        opts = dict(spec.options)
        self.trap = Path(str(opts["trap"]))
        self.release = Path(str(opts["release"]))
        self.inner: Any = _scripted(spec)
        self.name = spec.name
        self.capabilities = self.inner.capabilities
        self.failed: set[str] = set()

    async def connect(self, call: CallInfo) -> AgentSession:
        if self.trap.exists() and not self.release.exists():
            key = call.facts_sha256
            if key not in self.failed:
                self.failed.add(key)
                raise ConnectionError("the trap refused the call")
            while not self.release.exists():
                await asyncio.sleep(0.1)
        session: AgentSession = await self.inner.connect(call)
        return session

    async def aclose(self) -> None:
        await self.inner.aclose()


def trapped(spec: AgentSpec) -> TrapAdapter:
    return TrapAdapter(spec)


class GateAdapter:
    def __init__(self, spec: AgentSpec) -> None:
        opts = dict(spec.options)
        self.left = int(opts["allow"])
        self.release = Path(str(opts["release"]))
        self.inner: Any = _scripted(spec)
        self.name = spec.name
        self.capabilities = self.inner.capabilities

    async def connect(self, call: CallInfo) -> AgentSession:
        if self.left > 0:
            self.left -= 1
        else:
            while not self.release.exists():
                await asyncio.sleep(0.1)
        session: AgentSession = await self.inner.connect(call)
        return session

    async def aclose(self) -> None:
        await self.inner.aclose()


def gated(spec: AgentSpec) -> GateAdapter:
    return GateAdapter(spec)
