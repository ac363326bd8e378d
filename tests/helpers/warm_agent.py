"""An adapter with a warm-up that takes a while and leaves a trace, for the start-up tests.

It is the scripted agent (the `scripted` entry point) behind `prepare`. Options: `trace` (a file
each process appends to: `prepare <pid> <start> <end>` and `connect <pid> <time>`, wall-clock
seconds) and `prepare_s` (how long the warm-up takes; a process sleeps that long times one plus
its pid modulo 3, so workers come up at different times); `fail_prepare: true` raises in it.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from voice_audit.harness.adapter import AgentError, AgentSession, CallInfo
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.registry import AGENT_GROUP, load_object

OWN_OPTIONS = ("trace", "prepare_s", "fail_prepare")


class WarmingAdapter:
    def __init__(self, spec: AgentSpec) -> None:
        opts = dict(spec.options)
        self.trace = Path(str(opts["trace"]))
        self.prepare_s = float(opts.get("prepare_s", 0.0))
        self.fail = bool(opts.get("fail_prepare", False))
        inner_opts = {k: v for k, v in opts.items() if k not in OWN_OPTIONS}
        self.inner: Any = load_object("scripted", AGENT_GROUP)(
            spec.model_copy(update={"adapter": "scripted", "options": inner_opts})
        )
        self.name = spec.name
        self.capabilities = self.inner.capabilities

    def _note(self, line: str) -> None:
        with self.trace.open("a") as f:
            f.write(line + "\n")

    async def prepare(self) -> None:
        start = time.time()
        await asyncio.sleep(self.prepare_s * (1 + os.getpid() % 3))
        if self.fail:
            raise AgentError("harness_error", "the warm-up broke")
        self._note(f"prepare {os.getpid()} {start:.6f} {time.time():.6f}")

    async def connect(self, call: CallInfo) -> AgentSession:
        self._note(f"connect {os.getpid()} {time.time():.6f}")
        session: AgentSession = await self.inner.connect(call)
        return session

    async def aclose(self) -> None:
        await self.inner.aclose()


def warming(spec: AgentSpec) -> WarmingAdapter:
    return WarmingAdapter(spec)


def read_trace(path: Path) -> list[tuple[str, int, float]]:
    """(what, pid, when) per line: a prepare's end time, a connect's time."""
    out = []
    for line in path.read_text().splitlines():
        what, pid, *times = line.split()
        out.append((what, int(pid), float(times[-1])))
    return out
