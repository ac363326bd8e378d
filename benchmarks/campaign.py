"""Episodes per hour through the bundled reference agents, and where the time goes.

    .venv/bin/python benchmarks/campaign.py [--replicates 2] [--concurrency 4]

Runs a fixed campaign (the refund scenario, an accent pair and an affect pair, three voices,
cascaded + hybrid + native agents, accelerated pacing, offline stack) in this process, with the
TTS and ASR facades timed, and prints episodes/hour and the busy time of each component: caller
TTS, agent TTS, agent ASR, the harness's own ASR of audio-only agents, and the rest (the agents'
dialogue policies and the harness). The agents' reported compute is engine time (each content's
first measured cost, replayed on cache hits), so it cannot separate policy time; it is printed as
the virtual-clock latency the calls carried. Busy times overlap across concurrent calls, so shares
are of the summed busy time; the process CPU time is printed beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.audio import SpeechRecognizer, SpeechSynthesizer
from harness.planning import load_campaign
from harness.rundir import RunReader
from harness.runtime import CampaignRunner

CAMPAIGN = """\
name: bench-campaign
seed: 77
scenarios: [refund_duplicate_charge]
agents:
  - {{name: cascaded, adapter: cascaded}}
  - {{name: hybrid, adapter: hybrid}}
  - {{name: native, adapter: native}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
  - contrast: [affect]
    base: {{accent: us_general, voice_profile: male_adult, disfluency: none, wording: plain}}
    a: {{affect: calm}}
    b: {{affect: frustrated}}
voices: 3
replicates: {replicates}
concurrency: {concurrency}
pacing: accelerated
"""

BUSY: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def _instrument() -> None:
    """Time every TTS and ASR request, attributing it to the agent or to the caller/harness."""
    from agents.reference import _audio

    def owner(obj: object, kind: str) -> str:
        pool = _audio._synths if kind == "tts" else _audio._ears
        return f"agent {kind}" if any(obj is v for v in pool.values()) else ("caller tts" if kind == "tts" else "harness asr")

    speak, transcribe = SpeechSynthesizer.speak, SpeechRecognizer.transcribe

    async def timed_speak(self: SpeechSynthesizer, *a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await speak(self, *a, **k)
        finally:
            name = owner(self, "tts")
            BUSY[name] += time.perf_counter() - t0
            CALLS[name] += 1

    async def timed_transcribe(self: SpeechRecognizer, *a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await transcribe(self, *a, **k)
        finally:
            name = owner(self, "asr")
            BUSY[name] += time.perf_counter() - t0
            CALLS[name] += 1

    SpeechSynthesizer.speak = timed_speak  # type: ignore[method-assign]
    SpeechRecognizer.transcribe = timed_transcribe  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicates", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    _instrument()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cfile = tmp / "c.yaml"
        cfile.write_text(CAMPAIGN.format(replicates=args.replicates, concurrency=args.concurrency))
        loaded = load_campaign(cfile)
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        summary = asyncio.run(CampaignRunner(loaded, tmp / "run", cache_dir=tmp / "cache", progress=False).run())
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        compute_ms = 0.0
        reader = RunReader(tmp / "run")
        turns = 0
        for rec in reader.records():
            turns += rec.outcome.turns
        compute_ms = float(summary.stats.get("agent_compute_ms", 0.0))
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    total = sum(BUSY.values())
    print(f"{summary.ran} episodes ({summary.statuses.get('completed', 0)} completed), {turns} caller turns, "
          f"concurrency {args.concurrency}, wall {wall:.1f} s, process CPU {cpu:.1f} s")
    print(f"episodes per hour: {3600 * summary.ran / wall:.0f} (target >= 600)")
    print("| component | busy s | share | requests |")
    print("|---|---|---|---|")
    for name in ("caller tts", "agent tts", "agent asr", "harness asr"):
        print(f"| {name} | {BUSY[name]:.1f} | {BUSY[name] / total:.0%} | {CALLS.get(name, '')} |")
    print(f"| agent policies + harness (wall minus the above, per call slot) | {max(0.0, wall * args.concurrency - total):.1f} | | |")
    print(f"agent compute reported to the virtual clock: {compute_ms / 1000:.1f} s")


if __name__ == "__main__":
    main()
