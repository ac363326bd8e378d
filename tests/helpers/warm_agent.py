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

from tests.helpers.scripted_wrapper import ScriptedWrapper
from voice_audit.harness.adapter import AgentError, CallInfo
from voice_audit.harness.model.campaign import AgentSpec

OWN_OPTIONS = ("trace", "prepare_s", "fail_prepare")


class WarmingAdapter(ScriptedWrapper):
    def __init__(self, spec: AgentSpec) -> None:
        super().__init__(spec, OWN_OPTIONS)
        opts = dict(spec.options)
        self.trace = Path(str(opts["trace"]))
        self.prepare_s = float(opts.get("prepare_s", 0.0))
        self.fail = bool(opts.get("fail_prepare", False))

    def _note(self, line: str) -> None:
        with self.trace.open("a") as f:
            f.write(line + "\n")

    async def prepare(self) -> None:
        start = time.time()
        await asyncio.sleep(self.prepare_s * (1 + os.getpid() % 3))
        if self.fail:
            raise AgentError("harness_error", "the warm-up broke")
        self._note(f"prepare {os.getpid()} {start:.6f} {time.time():.6f}")

    async def before_connect(self, call: CallInfo) -> None:
        self._note(f"connect {os.getpid()} {time.time():.6f}")


def warming(spec: AgentSpec) -> WarmingAdapter:
    return WarmingAdapter(spec)


def read_trace(path: Path) -> list[tuple[str, int, float]]:
    """(what, pid, when) per line: a prepare's end time, a connect's time."""
    out = []
    for line in path.read_text().splitlines():
        what, pid, *times = line.split()
        out.append((what, int(pid), float(times[-1])))
    return out
