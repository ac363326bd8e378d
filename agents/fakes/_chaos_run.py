"""Run a campaign against chaos agents, in-process or served on loopback, for tests and benchmarks.

`EXPECTED` is the fault matrix: for each protocol, the faults that apply and the failure kind
each must be recorded with (None: none). Every fault is the agent's, so every faulted call
completes as an outcome, `unresolved` with the non-service flag in `NON_SERVICE` (a hanging agent
runs out the caller's patience: no failure kind, flag `agent_unresponsive`). Faults a protocol
cannot carry (a 5xx on a WebSocket, a flood on a request/response API, marks outside Twilio) are
left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from voice_audit.agents.fakes.chaos import ChaosAgent, Fault
from voice_audit.agents.serve import ServeConfig, start_server
from voice_audit.harness.model.failures import FailureKind, NonServiceFlag
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.harness.runtime.campaign import RunSummary

__all__ = ["EXPECTED", "NON_SERVICE", "PROTOCOLS", "ChaosRun", "run_chaos"]

Where = Literal["inproc", "http", "ws", "twilio", "realtime", "gemini-live"]
PROTOCOLS: tuple[Where, ...] = ("inproc", "http", "ws", "twilio", "realtime", "gemini-live")

_COMMON: dict[Fault, FailureKind | None] = {
    "hang": None,
    "drop": "disconnect",
    "malformed_json": "malformed_frame",
    "bad_audio": "malformed_frame",
    "exception": "agent_error",
}
_STREAMING: dict[Fault, FailureKind | None] = {**_COMMON, "flood": "protocol_error"}
EXPECTED: dict[Where, dict[Fault, FailureKind | None]] = {
    "inproc": {**_COMMON, "http_5xx": "http_error", "flood": "protocol_error"},
    "http": {**_COMMON, "http_5xx": "http_error"},
    "ws": _STREAMING,
    "twilio": {**_STREAMING, "no_marks": None},
    "realtime": _STREAMING,
    "gemini-live": _STREAMING,
}
NON_SERVICE: dict[Fault, NonServiceFlag | None] = {
    "hang": "agent_unresponsive",
    "drop": "agent_disconnected",
    "malformed_json": "agent_protocol_error",
    "bad_audio": "agent_protocol_error",
    "exception": "agent_error_event",
    "http_5xx": "agent_protocol_error",
    "flood": "agent_protocol_error",
    "no_marks": "agent_hung_up",  # not a fault, but every chaos agent hangs up after `hangup_after` turns
}

CAMPAIGN = """\
name: chaos-{where}
seed: {seed}
scenarios: [refund_duplicate_charge]
agents:
{agents}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
replicates: {replicates}
concurrency: {concurrency}
pacing: {pacing}
retries: {retries}
tts: {{name: espeak}}
asr: {{name: pocketsphinx}}
timeouts: {{connect_s: 20, turn_s: {turn_s}, call_s: {call_s}}}
patience: {{prompt_after_s: {prompt_s}, hang_up_after_s: {patience_s}}}
"""


@dataclass
class ChaosRun:
    run_dir: Path
    summary: RunSummary
    campaign_file: Path


async def run_chaos(
    workdir: Path,
    where: Where,
    agents: Mapping[str, dict[str, Any]],
    *,
    seed: int = 7,
    replicates: int = 1,
    concurrency: int = 32,
    retries: int = 0,
    turn_s: float = 10.0,
    call_s: float = 40.0,
    adapter_options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> ChaosRun:
    """One campaign whose agents are chaos agents (name -> chaos options), all run to the end."""
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    cfg = ServeConfig(greeting_timeout_s=2.0, turn_timeout_s=max(60.0, 2 * call_s), hangup_grace_s=0.5)
    entries: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        for name, opts in agents.items():
            if where == "inproc":
                spec = {"name": name, "adapter": "chaos", "options": opts}
            else:
                handle = await stack.enter_async_context(start_server(ChaosAgent(opts), where, config=cfg))
                spec = {
                    "name": name,
                    "adapter": where,
                    "url": handle.url,
                    "options": dict(adapter_options or {}),
                }
            entries.append("  - " + json.dumps(spec))
        text = CAMPAIGN.format(
            where=where,
            seed=seed,
            agents="\n".join(entries),
            replicates=replicates,
            concurrency=concurrency,
            pacing="accelerated" if where in ("inproc", "http") else "realtime",
            retries=retries,
            turn_s=turn_s,
            call_s=call_s,
            prompt_s=1.0,
            patience_s=3.0,
        )
        cfile = workdir / f"chaos-{where}.yaml"
        cfile.write_text(text)
        run_dir = workdir / f"run-{where}"
        runner = CampaignRunner(load_campaign(cfile), run_dir, cache_dir=workdir / "cache", progress=progress)
        summary = await runner.run()
    return ChaosRun(run_dir, summary, cfile)
