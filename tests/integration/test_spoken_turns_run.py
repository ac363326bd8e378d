"""Every record of a real campaign says in `turns` the caller turns spoken in its events, in both
pacings (accelerated turn-based calls in process, real-time streaming over WebSocket) and however
its calls ended: the agent's hang-up, the caller's hang-up with or without a line, the caller's
patience with a silent agent, a dropped line."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from voice_audit.agents.fakes import ChaosAgent
from voice_audit.agents.serve import ServeConfig, start_server
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import SCHEMA_VERSION, SPOKEN_TURNS_SCHEMA, RunReader, spoken_turns
from voice_audit.harness.runtime import CampaignRunner

AGENTS: dict[str, dict[str, Any]] = {
    "hang": {"faults": ["hang"], "seed": 3, "rate": 1.0},
    "drop": {"faults": ["drop"], "seed": 3, "rate": 1.0},
    "short": {"rate": 0.0, "hangup_after": 2},
    "long": {"rate": 0.0, "hangup_after": 40},
}
CAMPAIGN = """\
name: spoken-turns
seed: 5
scenarios: [refund_duplicate_charge]
agents:
{agents}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_scottish}}
voices: 1
pacing: {pacing}
tts: {{name: flite}}
asr: {{name: pocketsphinx}}
timeouts: {{connect_s: 20, turn_s: 10, call_s: 60}}
patience: {{prompt_after_s: 1, hang_up_after_s: 3}}
"""


async def _run(tmp_path: Path, cache: Path, where: str) -> Path:
    cfg = ServeConfig(greeting_timeout_s=2.0, turn_timeout_s=120.0, hangup_grace_s=0.5)
    entries: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        for name, opts in AGENTS.items():
            if where == "inproc":
                spec: dict[str, Any] = {"name": name, "adapter": "chaos", "options": opts}
            else:
                handle = await stack.enter_async_context(start_server(ChaosAgent(opts), where, config=cfg))
                spec = {"name": name, "adapter": where, "url": handle.url}
            entries.append("  - " + json.dumps(spec))
        pacing = "accelerated" if where == "inproc" else "realtime"
        cfile = tmp_path / "campaign.yaml"
        cfile.write_text(CAMPAIGN.format(agents="\n".join(entries), pacing=pacing))
        run_dir = tmp_path / "run"
        await CampaignRunner(load_campaign(cfile), run_dir, cache_dir=cache, progress=False).run()
    return run_dir


@pytest.mark.parametrize(
    "where",
    ["inproc", pytest.param("ws", marks=pytest.mark.serial)],  # real-time: the serial lane (Makefile)
)
def test_records_count_the_caller_turns_spoken(tmp_path: Path, audio_cache: Path, where: str) -> None:
    reader = RunReader(asyncio.run(_run(tmp_path, audio_cache, where)))
    records = list(reader.records())
    assert len(records) == 2 * len(AGENTS) and not reader.problems.items
    endings: set[str] = set()
    for rec in records:
        assert rec.schema_version == SCHEMA_VERSION >= SPOKEN_TURNS_SCHEMA
        events = reader.events(rec.header.episode_id)
        assert rec.outcome.turns == spoken_turns(events) > 0, (rec.header.agent, rec.outcome.termination)
        ending = rec.outcome.termination.split(":")[0]
        last = max(i for i, e in enumerate(events) if e.type in ("caller_decision", "caller_utterance_start"))
        if ending == "caller hung up" and events[last].type == "caller_decision":
            ending = "caller hung up without a line"
        endings.add(ending)
    assert {"agent hung up", "caller hung up without a line"} <= endings, endings
