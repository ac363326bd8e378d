"""The baseline the reference agents give, episodes per hour, and where the time goes.

    .venv/bin/python benchmarks/campaign.py [--agents cascaded,hybrid,native] [--policy key=value ...]
                                            [--concurrency 2] [--keep DIR] [--throughput]

Runs the baseline campaign in this process (the three locked scenarios, a General American calm
fluent caller, accelerated pacing, offline stack, telephone channel, every knob off) and prints,
per agent and scenario, the share of calls the remedy itself resolved (not an escalation) against
the target (cascaded and hybrid >= 90%, native >= 80%), split by adult and older voices, the calls
that missed, how the native agent's calls compare with the cascaded agent's for the same callers,
then episodes per hour and the busy time of each component: caller TTS, agent TTS, agent ASR, the
harness's own ASR of audio-only agents, and the rest (dialogue policies, models and the harness).
`--policy` overrides a policy option of every agent; `--agents llm` adds the LLM agent with its
default packaged model. `--throughput` runs the earlier throughput campaign instead.

Sample: 12 calls per agent and scenario, one per distinct voice: the adult female/male profiles
(f1 f2 f4, m1 m3 m5) and the older ones (f3 f5 grandma, m2 m4 m6), all General American, calm,
fluent. Replicates would not add information: a fluent caller's audio does not depend on the seed,
so a replicate is the same call again. With 12 calls a cell meets 90% with at most one miss.

Measured 2026-12-02 with this script's defaults (`--keep DIR` to read the calls), 108 calls, wall
715 s at load 12 on the shared 2-core machine, 544 episodes per hour; agent ASR 93% of the busy
time, harness ASR of the native agent 6%, caller TTS 1%. Calls the remedy resolved of 12,
cascaded / hybrid / native, per code state:

| code | refund | outage | plan |
|---|---|---|---|
| before (prompted recogniser, another fact after unusable answers; cascaded only measured) | 12 | 12 | 11 |
| + date of birth filled over hearings, read back when assembled; numeric and two-digit-year dates; a zip code too short to be one asked again, not refused; "narrow" for zero, "not" for dot; native keyword spotting | 12 12 12 | 12 12 11 | 11 11 11 |
| + date follow-ups naming the fact twice; a follow-up that added nothing is a plain repeat request; "yellow" for zero (final) | 12 12 12 | 12 12 11 | 12 12 12 |

The one final miss is native, outage, voice m2: its zip code "six zero six one four" was unusable
three times, its date of birth heard as another date, its e-mail unusable; it asked for a human.
Whisper's output on the same audio varies between runs, so a cell can move by one call between
samples: the row-to-row gains are small against that noise. What the changes buy turn by turn is
cleaner: every distinct identity hearing of the three runs above, replayed through the old and the
new slot parsers (right value within the agent's tolerance):

| fact | distinct hearings | right value, old parser | right value, new parser | a right part of the date, kept for a follow-up |
|---|---|---|---|---|
| date of birth | 109 | 50 | 52 | 30 |
| zip code | 26 | 13 | 15 | - |
| e-mail | 12 | 4 | 5 | - |

The failing calls before: voice f1 on the plan scenario said "The fifteenth of July, nineteen
ninety three" and was heard as "I am a 15th of July, 19th of April." and "I've been seeing some
July, 1993." (each unusable alone, a whole date together), its zip code as "Free, narrow, free,
narrow. High" (read as 339 and refused); voice grandma's as "Have you guys, 1993?" then, after the
plain repeat request, "15 something you guys, 1993", its zip code "Free, yellow, free, yellow."
and "Three, three, three" (now asked again, then heard right).
Recogniser hints for dates: a prompt listing the month names gave 17 right dates of 19 against 17
of 20 with the agent's own question only, and for one voice (m5) the recogniser returned the list
itself ("November, November, September, ..."), so dates keep no hint beyond the question.
The read-back of an assembled date is worded as a question naming the fact ("I have July fifteenth,
nineteen ninety three. Is that your birthday, your date of birth?"): the scripted caller reads a
bare "Is that right?" as a question that asks for nothing and goes on with its script, so it can
restate the fact but never confirm or correct a read-back.

Native: its calls differ from the cascaded agent's calls of the same 36 callers in turn count in
20, in length in all 36; the outcome label differs in 12, all on the outage scenario, where the
harness reads "credit_issued" from the native agent's audio and "partial_credit" from the other
agents' tool trace (both a remedy here). Its keyword spotting was not measured on its own (no
second run with `keyword_spotting: false`).

Earlier, 6 calls per cell (adult voices only), the recogniser prompt took the refund cell from 1/4
to 6/6 and asking another fact after unusable answers took outage from 4/6 to 6/6; before that the
issue's table for the same stack said cascaded ~50%, hybrid ~42%, native 42% acceptable.

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

from voice_audit.harness.audio import SpeechRecognizer, SpeechSynthesizer
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

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
tts: {{name: espeak}}
"""

BUSY: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def _instrument() -> None:
    """Time every TTS and ASR request, attributing it to the agent or to the caller/harness."""
    from voice_audit.agents.reference import _audio

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
