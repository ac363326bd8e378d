"""The campaign the executor tests and benchmarks place: one accent pair on one scenario, espeak
voices, by default the scripted agent on the accelerated clock.

Deterministic, so two runs of it on any executor must match call for call; each replicate is
`voices` x 2 calls (the pair's two sides).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from voice_audit.agents.fakes import ScriptedAgent
from voice_audit.agents.serve import start_server
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner, RunSummary
from voice_audit.harness.runtime.executors import Executor

SCRIPTED = '{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}'


def ws_agent(url: str, name: str = "ws") -> str:
    """A WebSocket agent at `url`, as an entry of the campaign's `agents` list (flow style)."""
    return f'{{name: {name}, adapter: ws, url: "{url}"}}'


def campaign_yaml(
    *,
    name: str = "rc",
    seed: int = 17,
    agents: str = SCRIPTED,
    accent_b: str = "l2_spanish",
    voices: int = 3,
    replicates: int = 4,
    concurrency: int = 4,
    pacing: str = "accelerated",
) -> str:
    """The campaign's YAML; `agents` is the entries of its agent list (flow style, comma-separated)."""
    return f"""\
name: {name}
seed: {seed}
scenarios: [refund_duplicate_charge]
agents: [{agents}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: {accent_b}}}
voices: {voices}
replicates: {replicates}
concurrency: {concurrency}
pacing: {pacing}
tts: {{name: espeak}}
"""


def run_realtime_ws(tmp_path: Path, executor: Executor, cache_dir: Path, **campaign: Any) -> RunSummary:
    """A real-time campaign (`campaign_yaml(**campaign)`) against a scripted WebSocket agent served
    in this process for the run, on `executor`, with `cache_dir` as its audio cache (the session's:
    `tests.helpers.pilot_cache.session_cache`); the run folder is `tmp_path / "run"`."""

    async def go() -> RunSummary:
        async with start_server(ScriptedAgent(audio_ms=300), "ws") as handle:
            text = campaign_yaml(agents=ws_agent(handle.url), pacing="realtime", **campaign)
            (tmp_path / "c.yaml").write_text(text)
            runner = CampaignRunner(
                load_campaign(tmp_path / "c.yaml"),
                tmp_path / "run",
                cache_dir=cache_dir,
                progress=False,
            )
            return await runner.run(executor=executor)

    return asyncio.run(go())
