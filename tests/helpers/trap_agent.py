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

from tests.helpers.scripted_wrapper import ScriptedWrapper
from voice_audit.harness.adapter import CallInfo
from voice_audit.harness.model.campaign import AgentSpec

OWN_OPTIONS = ("trap", "release", "allow")


async def _until(path: Path) -> None:
    while not path.exists():
        await asyncio.sleep(0.1)


class TrapAdapter(ScriptedWrapper):
    def __init__(self, spec: AgentSpec) -> None:
        super().__init__(spec, OWN_OPTIONS)
        self.trap = Path(str(spec.options["trap"]))
        self.release = Path(str(spec.options["release"]))
        self.failed: set[str] = set()

    async def before_connect(self, call: CallInfo) -> None:
        if self.trap.exists() and not self.release.exists():
            key = call.facts_sha256
            if key not in self.failed:
                self.failed.add(key)
                raise ConnectionError("the trap refused the call")
            await _until(self.release)


def trapped(spec: AgentSpec) -> TrapAdapter:
    return TrapAdapter(spec)


class GateAdapter(ScriptedWrapper):
    def __init__(self, spec: AgentSpec) -> None:
        super().__init__(spec, OWN_OPTIONS)
        self.left = int(spec.options["allow"])
        self.release = Path(str(spec.options["release"]))

    async def before_connect(self, call: CallInfo) -> None:
        if self.left > 0:
            self.left -= 1
        else:
            await _until(self.release)


def gated(spec: AgentSpec) -> GateAdapter:
    return GateAdapter(spec)
