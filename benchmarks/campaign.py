"""The baseline the reference agents give, episodes per hour, and where the time goes.

    .venv/bin/python benchmarks/campaign.py [--agents cascaded,hybrid,native] [--policy key=value ...]
                                            [--concurrency 2] [--throughput]

Runs the baseline campaign in this process (the three locked scenarios, a General American calm
fluent caller, the female and male adult voice profiles x three voices, accelerated pacing, offline
stack, telephone channel, every knob off) and prints, per agent and scenario, the share of calls
the remedy itself resolved (not an escalation) against the target (cascaded and hybrid >= 90%,
native >= 80%), then episodes per hour and the busy time of each component: caller TTS, agent TTS,
agent ASR, the harness's own ASR of audio-only agents, and the rest (dialogue policies, models and
the harness). `--policy` overrides a policy option of every agent, which is how the table below was
made; `--agents llm` adds the LLM agent with its default packaged model. `--throughput` runs the
earlier throughput campaign (refund scenario, accent and affect pairs) instead.

Measured 2026-12-01 on the shared 2-core machine (load 7-11, niced; 54 calls in 750 s, about 260
episodes per hour on that load), calls the remedy resolved out of 6 per cell, cascaded / hybrid /
native; the rows are the agent options of each change, all other options at their defaults:

| change | refund | outage | plan |
|---|---|---|---|
| before: `contextual_asr=false switch_fact_after=null` [a] | 1/4 1/4 1/4 | - | - |
| + per-turn recogniser prompt (`contextual_asr=true`, `switch_fact_after=null`) | 6 6 6 | 4 4 4 | 5 5 5 |
| + another identity fact after two unusable answers (`switch_fact_after=1`, the default) | 6 6 6 | 6 6 6 | 6 6 6 |
| native with its own dialogue (name then zip code, no confidence repairs, next fact at once) | - - 6 | - - 6 | - - 6 |

[a] stopped after the first 12 calls (the escalating calls are long); the issue's table for the
same stack said cascaded ~50%, hybrid ~42%, native 42% acceptable. The name "Jordan Avery Lee"
came back as "Norah Gohay, Merely" or "Jordan Aimee, where we leave", the zip code as "high in 41,
0,000", the e-mail as "Lord of God, free and mental.com".
Final code, this script with its defaults (`--keep` to read the calls; campaign `bench-baseline`,
other seeds than the runs above; 54 calls, wall 310 s on a lighter moment of the machine, 626
episodes per hour; agent ASR 91% of the busy time, harness ASR of the native agent 7%, caller TTS
2%, agent TTS and everything else under 5%): refund 6 6 6, outage 6 6 6, plan 5 5 5, i.e. 52 of
54. The one plan call that fails for every agent is the same voice (female f1): its date of birth
comes back as "Good thing, have you lied? I'm thing I'm the free", its zip code "three zero three
zero nine" as "Free, narrow, free, narrow. High" (read as 339 and refused), its e-mail as
"patel@nmple.com"; the cascaded and hybrid plan cells are at 83%, under their 90% target, in
this sample (6/6 in the two other samples). Whisper's output on the same turn varies between
runs, so cells move by one call between samples.

With its own dialogue the native agent's calls differ from the cascaded agent's in all 18 cells'
calls (turns, duration); before, every call had the same number of turns as the cascaded one.

What failed and what fixed it (read from events.jsonl, agent_heard against the caller's words):
- names: Whisper tiny.en on 8 kHz mu-law cannot spell a name it has never seen; with the account's
  name as a phrase hint (a deployment's ASR gets the CRM record the caller's number found) the
  name comes back exact at confidence 0.8-0.97 for every General American voice;
- the caller's request ("refund" heard as "reference") and plan names ("Mobile made"): the
  scenario's vocabulary and the agent's own last line in the prompt;
- dates and zip codes: no prompt rescued "six zero six one four" or "the fifteenth of July, nineteen
  ninety three" for some voices (a digit list in the prompt even turned "21st" into "23rd", so
  dates get no hint); what works is what a human agent does, asking for another fact after two
  unusable answers;
- the native caller mis-read "Can you confirm the lip code on the account? You're postal code." as
  no challenge; the challenge is now one question naming the fact.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from harness.audio import SpeechRecognizer, SpeechSynthesizer
from harness.planning import load_campaign
from harness.rundir import RunReader
from harness.runtime import CampaignRunner

BASELINE = """\
name: bench-baseline
seed: 4242
scenarios: [{scenarios}]
agents:
{agents}
pairs:
  - name: "General American calm fluent, adult voices"
    contrast: [voice_profile]
    base: {{accent: us_general, affect: calm, disfluency: none, wording: plain}}
    a: {{voice_profile: female_adult}}
    b: {{voice_profile: male_adult}}
  - name: "General American calm fluent, older voices"
    contrast: [voice_profile]
    base: {{accent: us_general, affect: calm, disfluency: none, wording: plain}}
    a: {{voice_profile: female_older}}
    b: {{voice_profile: male_older}}
voices: 3
replicates: 1
concurrency: {concurrency}
pacing: accelerated
tts: {{name: espeak}}
asr: {{name: faster-whisper}}
channel: {{telephone: true}}
"""
TARGET = {"casc": 0.9, "hyb": 0.9, "nat": 0.8}
REMEDIES = {"refund_issued", "credit_issued", "partial_credit", "plan_corrected"}

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
        return (
            f"agent {kind}"
            if any(obj is v for v in pool.values())
            else ("caller tts" if kind == "tts" else "harness asr")
        )

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


def _policy_value(text: str) -> Any:
    return yaml.safe_load(text)


SCENARIOS = "refund_duplicate_charge,outage_support,plan_correction"


def baseline_yaml(
    agents: list[str], policy: dict[str, Any], concurrency: int, scenarios: str = SCENARIOS
) -> str:
    options = json.dumps({"policy": policy}) if policy else "{}"
    lines = "\n".join(f"  - {{name: {a}, adapter: {a}, options: {options}}}" for a in agents)
    return BASELINE.format(agents=lines, concurrency=concurrency, scenarios=", ".join(scenarios.split(",")))


def baseline_table(reader: RunReader) -> list[str]:
    """Per agent and scenario: calls the remedy resolved (adult / older voices), escalations, other
    outcomes, the target; then the calls that missed, and how the native agent's calls compare with
    the cascaded agent's calls of the same callers (a copy would have the same turns every time)."""
    cells: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
    arch: dict[str, str] = {}
    by_caller: dict[tuple[str, str], dict[str, tuple[int, str, float]]] = defaultdict(dict)
    missed: list[str] = []
    for rec in reader.records():
        h = rec.header
        outcome = rec.outcome.terminal_outcome or rec.outcome.status
        group = "older" if h.condition.voice_profile.endswith("_older") else "adult"
        cells[(h.agent, h.scenario_id)].append((outcome, group, h.speech.variant or ""))
        arch[h.agent] = h.architecture or ""
        by_caller[(h.scenario_id, h.caller_id)][h.agent] = (
            rec.outcome.turns,
            outcome,
            rec.outcome.duration_ms or 0.0,
        )
        if outcome not in REMEDIES:
            missed.append(
                f"{h.agent} {h.scenario_id} voice {h.speech.variant}: {outcome} ({rec.outcome.termination})"
            )
    out = [
        "| agent | scenario | calls | resolved by the remedy | adult / older voices | escalated | other | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (agent, scenario), rows in sorted(cells.items()):
        n = len(rows)
        good = sum(o in REMEDIES for o, _, _ in rows)
        split = " / ".join(
            f"{sum(o in REMEDIES for o, g2, _ in rows if g2 == g)}/{sum(g2 == g for _, g2, _ in rows)}"
            for g in ("adult", "older")
        )
        esc = sum(o == "escalated" for o, _, _ in rows)
        other = ", ".join(sorted({o for o, _, _ in rows if o not in REMEDIES and o != "escalated"})) or "-"
        target = TARGET.get(arch[agent], 0.9)
        verdict = "met" if good / n >= target else "MISSED"
        out.append(
            f"| {agent} | {scenario} | {n} | {good}/{n} ({good / n:.0%}) | {split} | {esc} | {other} | >= {target:.0%} {verdict} |"
        )
    out += [f"missed: {m}" for m in sorted(missed)] or ["missed: none"]
    nat = [a for a, k in arch.items() if k == "nat"]
    casc = [a for a, k in arch.items() if k == "casc"]
    if nat and casc:
        both = [v for v in by_caller.values() if nat[0] in v and casc[0] in v]
        turns = sum(v[nat[0]][0] != v[casc[0]][0] for v in both)
        length = sum(v[nat[0]][2] != v[casc[0]][2] for v in both)
        differ = sum(v[nat[0]][1] != v[casc[0]][1] for v in both)
        out.append(
            f"native vs cascaded, same callers ({len(both)}): turn count differs in {turns}, call length in {length}, "
            f"outcome in {differ}"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", default="cascaded,hybrid,native")
    ap.add_argument("--scenarios", default=SCENARIOS)
    ap.add_argument(
        "--keep", type=Path, default=None, help="write the run folder here (kept) instead of a temporary one"
    )
    ap.add_argument(
        "--policy", nargs="*", default=[], metavar="KEY=VALUE", help="policy option for every agent"
    )
    ap.add_argument(
        "--throughput", action="store_true", help="the throughput campaign instead of the baseline"
    )
    ap.add_argument("--replicates", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()
    policy: dict[str, Any] = {}
    for item in args.policy:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(
                f"benchmarks/campaign.py: --policy {item!r}: expected KEY=VALUE (e.g. contextual_asr=false)"
            )
        policy[key] = _policy_value(value)
    _instrument()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cfile = tmp / "c.yaml"
        if args.throughput:
            cfile.write_text(CAMPAIGN.format(replicates=args.replicates, concurrency=args.concurrency))
        else:
            cfile.write_text(baseline_yaml(args.agents.split(","), policy, args.concurrency, args.scenarios))
        loaded = load_campaign(cfile)
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        run_dir = args.keep if args.keep is not None else tmp / "run"
        summary = asyncio.run(CampaignRunner(loaded, run_dir, cache_dir=tmp / "cache", progress=False).run())
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        compute_ms = 0.0
        reader = RunReader(run_dir)
        table = [] if args.throughput else baseline_table(reader)
        turns = 0
        for rec in reader.records():
            turns += rec.outcome.turns
        compute_ms = float(summary.stats.get("agent_compute_ms", 0.0))
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    total = sum(BUSY.values()) or 1.0
    if table:
        print("baseline, every knob off" + (f", policy {policy}" if policy else "") + ":")
        print("\n".join(table))
    print(
        f"{summary.ran} episodes ({summary.statuses.get('completed', 0)} completed), {turns} caller turns, "
        f"concurrency {args.concurrency}, wall {wall:.1f} s, process CPU {cpu:.1f} s"
    )
    print(f"episodes per hour: {3600 * summary.ran / wall:.0f} (target >= 600)")
    print("| component | busy s | share | requests |")
    print("|---|---|---|---|")
    for name in ("caller tts", "agent tts", "agent asr", "harness asr"):
        print(f"| {name} | {BUSY[name]:.1f} | {BUSY[name] / total:.0%} | {CALLS.get(name, '')} |")
    print(
        f"| agent policies + harness (wall minus the above, per call slot) | {max(0.0, wall * args.concurrency - total):.1f} | | |"
    )
    print(f"agent compute reported to the virtual clock: {compute_ms / 1000:.1f} s")


if __name__ == "__main__":
    main()
