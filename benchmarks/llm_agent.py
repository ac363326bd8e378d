"""The LLM agents on the baseline caller with the default offline model: remedy rate, seconds per
model step and per call.

    .venv/bin/python benchmarks/llm_agent.py [--agents llm_hybrid,llm] [--scenarios refund_duplicate_charge,...]
                                             [--voices 1] [--model qwen2.5-coder-1.5b] [--concurrency 1]

The baseline campaign of `benchmarks/campaign.py` (General American, calm, fluent; adult and older
voice profiles; accelerated pacing, offline stack, telephone channel, every knob off) through the
LLM agents, with the model in-process. Prints the per-agent, per-scenario table of calls the remedy
resolved, then per agent: model steps per call, wall and CPU seconds per step (the model's own
thread, so a loaded machine's queueing shows as wall minus CPU), and wall seconds per call.

With `--aa N` it runs instead an A/A campaign through `llm_hybrid` (both calls of each pair
identical, `contrast: []`, refund scenario, General American calm male adult, 3 voices x N
replicates) and reports its false-positive rate the way `benchmarks/calibration_pipeline.py` does
for the rule agents (`voice_audit.analysis.pipeline_calibration`: pairs drawn with replacement, a/b swapped
with probability 1/2, rejection = the plan's interval excludes 0, pooled over the metrics whose
pairs differ at all). With a deterministic agent the two calls of a pair differ only where the
harness's own per-call randomness (the caller's timing, each call's synthesis seed) reaches them.

The caller's patience is a wall-clock guard even on the virtual clock (an agent still busy after
`hang_up_after_s` is abandoned); on a loaded shared machine a 1.5B model's first turn can exceed
the default 45 s, so this benchmark raises it (`--patience-s`). The virtual clock still advances by
the compute the agent reports, so what the caller experiences is unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from voice_audit.harness.llm import LocalChatClient
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

_spec = importlib.util.spec_from_file_location("bench_campaign", Path(__file__).with_name("campaign.py"))
assert _spec is not None and _spec.loader is not None
campaign = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(campaign)

STEPS: list[tuple[float, float, int, int, int]] = []
"""(wall s, thread CPU s, prompt tokens, cached tokens, completion tokens) per model request."""


def _instrument() -> None:
    chat_sync = LocalChatClient.chat_sync

    def timed(self: LocalChatClient, req: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        resp = chat_sync(self, req)
        u = resp.usage
        STEPS.append(
            (
                time.perf_counter() - t0,
                time.thread_time() - c0,
                u.prompt_tokens,
                u.cached_tokens,
                u.completion_tokens,
            )
        )
        return resp

    LocalChatClient.chat_sync = timed  # type: ignore[method-assign]


AA_CAMPAIGN = """\
name: llm-aa
description: "A/A: both sides identical (contrast []), the LLM hybrid agent with its default offline model"
seed: 7101
batch: llm-aa
scenarios: [refund_duplicate_charge]
agents:
  - {{name: llm_hybrid, adapter: llm_hybrid}}
pairs:
  - name: "A/A"
    contrast: []
    base: {{accent: us_general, voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
voices: 3
replicates: {replicates}
concurrency: {concurrency}
pacing: accelerated
tts: {{name: espeak}}
asr: {{name: faster-whisper}}
channel: {{telephone: true}}
patience: {{hang_up_after_s: {patience}}}
timeouts: {{turn_s: {turn}, call_s: 3600}}
"""


def run_aa(replicates: int, concurrency: int, patience: float, out: Path | None, resamples: int) -> None:
    import pandas as pd

    from voice_audit.analysis.pipeline import analyze

    spec = importlib.util.spec_from_file_location(
        "bench_calib", Path(__file__).with_name("calibration_pipeline.py")
    )
    assert spec is not None and spec.loader is not None
    calib = importlib.util.module_from_spec(spec)
    sys.modules["bench_calib"] = calib  # its dataclasses look their module up
    spec.loader.exec_module(calib)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cfile = tmp / "aa.yaml"
        cfile.write_text(
            AA_CAMPAIGN.format(
                replicates=replicates, concurrency=concurrency, patience=patience, turn=patience + 60
            )
        )
        run_dir = out if out is not None else tmp / "run"
        t0 = time.perf_counter()
        asyncio.run(
            CampaignRunner(load_campaign(cfile), run_dir, cache_dir=tmp / "cache", progress=False).run()
        )
        wall = time.perf_counter() - t0
        table = campaign.baseline_table(RunReader(run_dir))
        calls = len(list(RunReader(run_dir).records()))
        res = analyze(run_dir)
        aa, per_metric = calib.aa_table(res, resamples, 20261202)
    alpha = res.plan.alpha
    aa["verdict"] = [calib._aa_verdict(r, alpha) for r in aa["rejection_rate"]]
    with pd.option_context("display.width", 250, "display.max_rows", 200):
        print(f"A/A through llm_hybrid: {res.summary['pairs']['included']} included pairs, alpha {alpha}, "
              f"{resamples} replicates, campaign wall {wall:.0f} s")  # fmt: skip
        print("\n".join(table))
        _print_steps("llm_hybrid", STEPS, calls, wall, concurrency)
        print(aa.to_string(**calib.FMT))
        print(per_metric.sort_values(["cell", "metric"]).to_string(**calib.FMT))


async def text_call(agent: str, scenario_id: str, model: str | None) -> tuple[str, int, list[str]]:
    """One call on text (the caller's words reach the agent exactly: no TTS, no ASR), with the
    harness's own caller policy deciding and reading the agent: what the model decides, alone."""
    from voice_audit.agents.reference._llm_policy import LLMConfig, LLMPolicy, shared_chat_client
    from voice_audit.agents.reference._policy import Heard, SayStep
    from voice_audit.harness.caller.policy import CallerPolicy
    from voice_audit.harness.tools import ToolFixture
    from voice_audit.personas import CallerCondition, load_catalogue, render_utterance
    from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

    scen = load_scenario_file(Path(BUNDLED_LIBRARY) / f"{scenario_id}.yaml")
    cfg = LLMConfig(**({"model": model} if model else {}))
    policy = LLMPolicy(
        scen.facts, ToolFixture(scen.facts), shared_chat_client(cfg), cfg, crm=agent == "llm_hybrid"
    )
    caller = CallerPolicy(scen)
    cond = CallerCondition(
        accent="us_general", voice_profile="male_adult", affect="calm", disfluency="none", wording="plain"
    )
    catalogue = load_catalogue()
    steps = policy.greet()
    said: dict[str, int] = {}
    transcript: list[str] = []
    terminal = "unresolved"
    for _ in range(24):
        text = " ".join(st.text for st in steps if isinstance(st, SayStep))
        transcript.append(f"agent: {text}")
        decision = caller.decide(text)
        terminal = decision.terminal or terminal
        if policy.ended or decision.say is None or decision.hang_up:
            break
        key = f"{decision.say.kind}:{decision.say.anchor_id or decision.say.template}"
        n = said.get(key, 0)
        said[key] = n + 1
        utt = render_utterance(decision.say.template, scen.caller.slots, cond, catalogue, seed=7, key=f"{key}:{n}",
                               framing=decision.say.framing and n == 0)  # fmt: skip
        transcript.append(f"caller: {utt.text}")
        steps = await policy.respond(Heard(utt.text, 0.95))
    return terminal, policy.model_calls, transcript


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", default="llm_hybrid,llm")
    ap.add_argument("--scenarios", default=campaign.SCENARIOS)
    ap.add_argument("--voices", type=int, default=3)
    ap.add_argument("--model", default=None, help="a packaged model (default: the agents' default)")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--patience-s", type=float, default=600.0)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument(
        "--aa", type=int, default=0, metavar="N", help="an A/A campaign of 3 voices x N replicates instead"
    )
    ap.add_argument("--resamples", type=int, default=300, help="A/A replicate analyses")
    ap.add_argument(
        "--text", action="store_true", help="calls on text (no speech): the model's decisions alone"
    )
    ap.add_argument("--verbose", action="store_true", help="print each text call's transcript")
    args = ap.parse_args()
    _instrument()
    if args.text:
        for agent in args.agents.split(","):
            for sc in args.scenarios.split(","):
                before, t0 = len(STEPS), time.perf_counter()
                terminal, calls, transcript = asyncio.run(text_call(agent, sc, args.model))
                steps = STEPS[before:]
                cpu = sum(x[1] for x in steps)
                print(f"| {agent} | {sc} | {terminal} | {calls} steps | CPU {cpu / max(1, len(steps)):.1f} s / step | "
                      f"wall {time.perf_counter() - t0:.0f} s |", flush=True)  # fmt: skip
                if args.verbose:
                    print("\n".join("    " + line for line in transcript))
        return
    if args.aa:
        run_aa(args.aa, args.concurrency, args.patience_s, args.keep, args.resamples)
        return
    agents = args.agents.split(",")
    per_agent: dict[str, list[tuple[float, float, int, int, int]]] = defaultdict(list)
    walls: dict[str, float] = {}
    tables: list[str] = []
    for agent in agents:  # one agent at a time, so each step is attributed to it
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            text = campaign.baseline_yaml([agent], {}, args.concurrency, args.scenarios)
            text = text.replace("voices: 3", f"voices: {args.voices}")
            if args.model:
                text = text.replace("options: {}", f'options: {{llm: {{model: "{args.model}"}}}}')
            text += f"patience: {{hang_up_after_s: {args.patience_s}}}\ntimeouts: {{turn_s: {args.patience_s + 60}, call_s: 3600}}\n"
            cfile = tmp / "c.yaml"
            cfile.write_text(text)
            run_dir = (args.keep / agent) if args.keep else tmp / "run"
            before = len(STEPS)
            t0 = time.perf_counter()
            asyncio.run(
                CampaignRunner(load_campaign(cfile), run_dir, cache_dir=tmp / "cache", progress=False).run()
            )
            walls[agent] = time.perf_counter() - t0
            per_agent[agent] = STEPS[before:]
            reader = RunReader(run_dir)
            rows = campaign.baseline_table(reader)
            tables += rows if not tables else rows[2:]
            n = len(list(reader.records()))
            walls[agent + ":calls"] = n
    print(
        f"baseline through the LLM agents, model {args.model or 'default'}, voices {args.voices}, concurrency {args.concurrency}:"
    )
    print("\n".join(tables))
    for agent in agents:
        _print_steps(agent, per_agent[agent], int(walls[agent + ":calls"]), walls[agent], args.concurrency)


def _print_steps(
    agent: str, steps: list[tuple[float, float, int, int, int]], calls: int, wall: float, concurrency: int
) -> None:
    print(
        "| agent | calls | model steps / call | wall s / step | CPU s / step | evaluated prompt tokens / step "
        "| generated tokens / step | wall s / call |"
    )
    print("|---|---|---|---|---|---|---|---|")
    n, k = calls or 1, len(steps) or 1
    print(
        f"| {agent} | {calls} | {len(steps) / n:.1f} | {sum(s[0] for s in steps) / k:.1f} | {sum(s[1] for s in steps) / k:.1f} | "
        f"{sum(s[2] - s[3] for s in steps) / k:.0f} | {sum(s[4] for s in steps) / k:.0f} | {wall * concurrency / n:.0f} |"
    )


if __name__ == "__main__":
    main()
