"""What the stimulus pilot costs, per line and per campaign, cold and from the cache.

    .venv/bin/python benchmarks/stimuli.py [CAMPAIGN ...]

For each campaign (default: campaigns/demo.yaml, an eSpeak General American vs Spanish L1 cell, the
old demo's, and a three-speaker disfluency cell: Flite's slt, kal16 and rms, fluent vs heavily
disfluent, ten replicates), runs the pilot twice in this process: cold (empty synthesis and
transcript caches in a temporary folder) and again from the cache (what every `voice-audit run`
pays once a campaign has been piloted). Prints wall and CPU seconds, milliseconds per line, the
largest line list of one voice (what a voice actor would record), each cell's verdict and its
non-contrast acoustics, and the machine's load average (the figures are from a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from voice_audit.harness.caller.lines import planned_lines
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.stimuli import run_pilot

ROOT = Path(__file__).resolve().parents[1]
ESPEAK_CELL = """
name: espeak-l2
seed: 20261130
scenarios: [refund_duplicate_charge]
agents: [{name: hybrid, adapter: hybrid}]
pairs:
  - name: "accent: General American vs Spanish L1"
    contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
voices: 3
tts: {name: espeak}
channel: {telephone: true, snr_db: 30, packet_loss: 0.01}
"""

DISFLUENCY_CELL = """
name: disfluency-3
seed: 20261130
scenarios: [refund_duplicate_charge]
agents: [{name: hybrid, adapter: hybrid}]
pairs:
  - name: "disfluency: fluent vs heavily disfluent"
    contrast: [disfluency]
    base: {accent: us_general, voice_profile: young_neutral, affect: calm, wording: plain}
    a: {disfluency: none}
    b: {disfluency: heavy}
voices: 3
replicates: 10
tts: {name: flite, options: {voices: {"en-us+klatt2": slt, "en-us+klatt4": kal16, "en-us+m7": rms}}}
channel: {telephone: true, snr_db: 30, packet_loss: 0.01}
"""


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


async def _pilot(path: Path, cache: Path) -> tuple[float, float, int, int, int, list[str]]:
    loaded = load_campaign(path)
    w0, c0 = time.perf_counter(), _cpu()
    result = await run_pilot(loaded, cache_dir=cache)
    wall, cpu = time.perf_counter() - w0, _cpu() - c0
    verdicts = [
        f"{c.pairs[0]}: {c.verdict} (WER {c.a.wer:.2f} / {c.b.wer:.2f}; words/s {c.a.rate_wps or 0:.2f} / "
        f"{c.b.rate_wps or 0:.2f}; confounds: {'; '.join(x.text for x in c.confounds) or 'none'})"
        for c in result.report.cells
        if c.a.wer is not None and c.b.wer is not None
    ]
    per_voice = Counter(line.voice for line in planned_lines(loaded))
    return wall, cpu, len(result.report.lines), max(per_voice.values()), result.recognised, verdicts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("campaigns", nargs="*", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = list(args.campaigns)
        if not paths:
            espeak = Path(tmp) / "espeak-l2.yaml"
            espeak.write_text(yaml.safe_dump(yaml.safe_load(ESPEAK_CELL)))
            disfluency = Path(tmp) / "disfluency-3.yaml"
            disfluency.write_text(yaml.safe_dump(yaml.safe_load(DISFLUENCY_CELL)))
            paths = [ROOT / "campaigns" / "demo.yaml", espeak, disfluency]
        print(
            f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)"
        )
        print(
            "| campaign | lines | lines of one voice (most) | cold wall s | cold CPU s | ms per line (wall / CPU) "
            "| cached wall s | cached ms per line |"
        )
        print("|---|---|---|---|---|---|---|---|")
        notes: list[str] = []
        for i, path in enumerate(paths):
            cache = Path(tmp) / f"cache-{i}"
            cw, cc, n, most, recognised, verdicts = asyncio.run(_pilot(path, cache))
            hw, _, _, _, again, _ = asyncio.run(_pilot(path, cache))
            assert again == 0, "the second pilot must come from the cache"
            print(
                f"| {path.name} | {n} | {most} | {cw:.1f} | {cc:.1f} | {1000 * cw / n:.0f} / {1000 * cc / n:.0f} "
                f"| {hw:.2f} | {1000 * hw / n:.1f} |"
            )
            notes += [f"{path.name}: {v}" for v in verdicts] + [
                f"{path.name}: {recognised} lines recognised cold"
            ]
        print()
        for line in notes:
            print(f"- {line}")
        print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
