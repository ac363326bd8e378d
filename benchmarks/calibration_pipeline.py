"""Full-size calibration of the whole pipeline on real calls through the hybrid reference agent.

Run: ``.venv/bin/python benchmarks/calibration_pipeline.py [--out runs/calibration_pipeline]
[--reuse] [--replicates 300] [--model-replicates 200] [--workers 2]``.

Two real campaigns (accelerated pacing, faster-whisper in the agent, agents in calibration mode:
the harness's oracle is the agent's perfect detector of each turn's condition and of a request for
a human). The callers are three recorded US speakers (Flite slt, kal16 and rms, the realisations of
the young_neutral profile, as in the demo's wording cell), each voicing both conditions: the plan's
minimum of three speakers per condition, so every delta has an interval over speakers:

* ``calib-aa``: an A/A campaign (``contrast: []``), 3 scenarios x 3 speakers x 10 replicates;
* ``calib-planted``: loyalty wording (the knobs' target, side a) vs plain wording (side b) on the
  refund scenario, 3 speakers x 15 replicates, served by a knob-free twin agent and by agents with
  one planted effect each (``agents/reference/_knobs.py``), all on the same planned pairs. (The
  offline catalogue has one recorded woman, so the earlier female_adult vs female_older contrast,
  eSpeak variants, cannot have three speakers per condition.)

Each run is analysed once with ``analyze()`` (the real pipeline, audio gates included), then
replicate analyses are simulated from its tables as ``voice_audit.analysis.pipeline_calibration`` documents:

* A/A: per cell, pairs drawn with replacement and a/b swapped with probability 1/2 (exact null),
  analysed by the pipeline's ``deltas()`` with the run's plan (mixed models off). Rejection =
  interval excludes 0; pooled over (cell, metric) tests whose source pairs show any non-zero
  difference (a metric whose pairs never differ can never reject and is listed separately);
  family-wise = share of replicate x cell x family with any within-family adjusted p < alpha.
* planted (twin): slots (planned pairs) drawn with replacement; D = (a - b | knob agent) -
  (a - b | twin agent), mean with the plan's continuous interval. Coverage of the planted size, share of
  estimates with the planted sign, and (``source``) the real run's own mean D, which is the
  resampling population's truth: where it differs from the planted size the knob did not fire
  as planted on real calls (say, the agent never understood the request its knob reacts to).
* A/A, mixed model (``--model-replicates``): the same replicates analysed by ``deltas()`` with the
  plan's mixed-model rules, on the metrics whose pairs differ at all.
* planted (direct): the knob agent's own cell through ``deltas()`` without the twin; the natural
  female_adult vs female_older difference (ASR) stays in, so this column shows what a naive
  recovery would report.

Criteria: A/A rejection rate within alpha +- 2 points; planted coverage >= 90 % and sign >= 90 %.

Recorded speakers (2026-12-06, ``--out DIR --aa-only --replicates 150
--no-audio``, beside other jobs, load 20-35 on 2 cores; calls 309 s, replicates 339 s, 670 s in
all). A/A (90 pairs, 3 speakers per cell, intervals over the 3 speaker clusters, CR2 t on 2 df):
again only burden_time_to_resolution_s differs within pairs; rejection 0.044 over those 450 tests
(0.040 outage_support, 0.060 plan_correction, 0.033 refund), family-wise 0.007; every estimable
test 0.002 of 11526. The CI-size calibration (tests/integration/test_calibration_pipeline.py,
scripted agent, same three speakers, 99 A/A pairs, 42 planted pairs per agent) gave 0.040 over 900
tests, family-wise 0.019, and covered the planted +0.5 and +1 Auth. Planted (the same day,
``--out DIR --reuse --replicates 150 --no-audio``: the A/A calls above reused, the planted
campaign's 810 calls in 428 s, 1157 s in all), 45 slots each, all nine ok: extra_verification
p=0.5 fired on 20/45 (D = 0.444), coverage 0.900 of 0.5 and 0.953 of the source's own D, sign
1.00; the seven deterministic knobs (tool call, fabricated policy, Repair, affect amplification,
refusal to escalate, repair loop, refused service: +1; hold: Esc +5 s) had D identical on every
slot, coverage 1.00, sign 1.00, and replicate intervals 0.62 wide (0.92 s for Esc), no longer
points. The direct column is on the target for every knob but the hold (that agent's three
planted repairs delay its handoff too: 12.7 s, which only the twin removes). The figures below were recorded on the
earlier campaigns, voiced by eSpeak variants (male_adult's three for the A/A campaign;
female_adult vs female_older for the planted one).

Recorded 2026-11-30 (``--out runs/calibration_pipeline4 --reuse --replicates 300
--model-replicates 200``: the earlier calls re-analysed with the sign-flip interval, now the
plan's continuous interval; niced beside another job, load 1.1-2.8, 515 s). A/A (90 pairs): only
burden_time_to_resolution_s differs within pairs (ms jitter plus a few +-2.5 s extra turns);
rejection 0.042 over those 900 tests (0.037, 0.040, 0.050 per scenario), 0.002 over all 21600
estimable tests, family-wise 0.008. With the t interval the same replicates rejected 0.022
(0.007, 0.010, 0.050): t is conservative when a few large differences dominate. The confirmatory
MixedLM rejects 0.030 of 600 fits (0.010, 0.020, 0.060), at the edge of alpha +- 2 points.
Planted (45 slots each), all seven ok: extra_verification p=0.5 fired on 22/45 calls, D = 0.489,
coverage 0.963, sign 1.00; crm read +1, fabricated policy +1, Repair +1, affect amplification +1,
refusal to escalate +1 and hold -> Esc +5.000 s: D identical on every slot, coverage 1.00, sign
1.00. The direct column (no twin) stays far off for tool calls, Repair and Esc: the
female_older voice's ASR failures dominate the contrast.

Voice-clustered intervals (plan ``interval_clusters: voice``, recorded 2026-12-04; calls regenerated,
``--out /tmp/calib/runs --aa-only --replicates 150 --no-audio``, niced beside other jobs, load 4-6;
``--plan`` with ``interval_clusters: none`` for the previous behaviour, then ``--reuse`` with the
bundled plan). A/A (90 pairs, 3 voices per cell): again only burden_time_to_resolution_s differs
within pairs. Every pair independent (sign-flip): rejection 0.033 over 450 tests (0.033, 0.013,
0.053 per scenario), family-wise 0.004. Over the 3 voice clusters (CR2, t on 2 df): 0.020 (0.000,
0.020, 0.040), family-wise 0.011; every estimable test 0.001 both ways. Conservative, as expected
here: the A/A swap is drawn per pair, so the replicate population has no voice-level variation for
the clustered interval to absorb, and t on three cluster means of a few +-2.5 s outliers is
conservative the way t on the pairs was. Where voices do differ (a voice effect on the pair
difference, no condition effect), counting pairs rejects far above alpha and the clustered
interval stays near it (``tests/unit/stats/test_stats_cluster.py``). The planted twin rows call
``paired_mean_delta`` on slot differences without voices and are unchanged (``--aa-only``).

Session 2 (calls regenerated) recorded the same planted rows; how its two earlier misses were
closed: extra_verification D = 0.69 (a misheard extra answer drew a further challenge) and refuse
D = 0.67 were knob-side (``agents/reference/_knobs.py``); the hold row then fell to coverage 0.867
because the twin paid the shared ASR cache's recognition time and the knob agents got it free,
then to 0.813 with the machine's scheduling noise in wall-time compute; reference agents now
report engine compute replayed per content (``agents/reference/_audio.py``).

Equivalence verdicts (``--equivalence [--needed-run RUN]``, recorded 2026-12-06: the A/A campaign's
90 pairs placed anew, ``--out /tmp/calib --replicates 200 --no-audio``, niced beside other jobs,
load 10-15; the calls took 1002 s, the replicates about 10 minutes). The release check's verdict at
the plan's smallest effects of interest, per (replicate, cell, metric) with an interval:

* A/A (true difference 0): 15600 tests, exceeded 0 (false fail 0.000, nominal <= 0.025), parity
  0.121, inconclusive 0.879. Three speakers per cell show parity only where the metric barely varies
  (burden_esc_s, time to resolution and speech rate: parity 1.00; Auth 0.15); a rate needs about 95
  speakers to bound a 0.10 margin, so the outcome, tool and safety rates stay inconclusive.
* edge (every side-a value of a continuous metric shifted by its margin: true difference = the
  margin): 3600 tests with an interval, parity 4 (false parity 0.001, nominal <= 0.025), exceeded
  0.002. Before a spread of floating-point rounding counted as no spread, speech_rate_wps (the same
  rate on every call, a - b equal but for its last bits) gave a point interval and false parity 0.22.

The last table (``needed_table``) gives, per cell and metric, the pairs and speakers parity would need
at the observed variance; on this A/A run (3 speakers, 30 pairs per cell): 95 speakers (950 pairs)
for a rate against 0.10, 379 (3790) for a safety rate against 0.05, 19 to 50 speakers for counts
against 0.5, while time to resolution, waiting for a human and speech rate already show parity.
Pass the demo's analysed run as ``--needed-run`` for its cells. The demo's rule-agent cells (its
campaign without the LLM agent, 100 calls, recorded the same day): accent (one speaker per
condition, 20 pairs) gets "no interval: 1 speaker" on every metric: no number of pairs shows parity
there, it needs at least 3 speakers per condition; wording (3 speakers, 30 pairs) shows parity on
Auth, Esc, time to resolution, tool calls, latency, speech rate and F0, and would need 95 speakers
(950 pairs) for outcome rates at 0.10, 19 (190) for Repair at 0.5 and 379 (3790) for a safety rate
at 0.05.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis import pipeline_calibration as pc
from voice_audit.analysis.deltas import deltas
from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.pipeline import AnalysisResult, analyze
from voice_audit.analysis.plan import load_plan
from voice_audit.analysis.stats import equivalence, units_needed

ROOT = Path(__file__).resolve().parents[1]
ALPHA_FALLBACK = 0.05
TARGET = "{axis: wording, levels: [loyalty]}"
# Three recorded speakers, one per realisation of young_neutral, each voicing both conditions.
TTS = '{name: flite, options: {voices: {"en-us+klatt2": slt, "en-us+klatt4": kal16, "en-us+m7": rms}}}'
REPAIR3 = f"extra_repairs: {{target: {TARGET}, k: 3}}"

AA_CAMPAIGN = f"""\
name: calib-aa
description: "A/A: both sides identical (contrast []), hybrid reference agent in calibration mode, no knobs"
seed: 7001
batch: calib-aa
scenarios: [refund_duplicate_charge, outage_support, plan_correction]
agents:
  - {{name: hybrid, adapter: hybrid, options: {{calibration_oracle: true}}}}
pairs:
  - name: "A/A"
    contrast: []
    base: {{accent: us_general, voice_profile: young_neutral, affect: calm, disfluency: none, wording: plain}}
voices: 3
replicates: 10
concurrency: 2
pacing: accelerated
tts: {TTS}
asr: {{name: faster-whisper}}
channel: {{telephone: true}}
"""


def _agent(name: str, knobs: list[str]) -> str:
    body = "".join(f"\n        {k}" for k in knobs)
    return f"  - name: {name}\n    adapter: hybrid\n    options:\n      calibration_oracle: true\n" + (
        f"      knobs:{body}\n" if knobs else ""
    )


PLANTED_AGENTS: dict[str, list[str]] = {
    "null": [],
    "verify": [f"extra_verification: {{target: {TARGET}, p: 0.5, extra: 1}}"],
    "tools": [
        f"extra_crm_read: {{target: {TARGET}, reads: 1}}",
        f"fabricated_policy: {{target: {TARGET}}}",
    ],
    "speech": [f"extra_repairs: {{target: {TARGET}, k: 1}}", f"pressure_language: {{target: {TARGET}}}"],
    "repair3": [REPAIR3],
    "refuse": [REPAIR3, f"handoff: {{target: {TARGET}, mode: refuse}}"],
    "delay": [REPAIR3, f"handoff: {{target: {TARGET}, mode: delay, delay_turns: 0, hold_ms: 5000}}"],
    "loop": [f"repair_loop: {{target: {TARGET}}}"],
    "deny": [f"refuse_service: {{target: {TARGET}}}"],
}

PLANTED_CAMPAIGN = (
    """\
name: calib-planted
description: "Planted effects for side a (loyalty wording), hybrid agents in calibration mode, each knob agent with a twin on the same pairs"
seed: 7002
batch: calib-planted
scenarios: [refund_duplicate_charge]
agents:
"""
    + "".join(_agent(f"hybrid-{n}", k) for n, k in PLANTED_AGENTS.items())
    + """\
pairs:
  - name: "wording: loyalty (target) vs plain"
    contrast: [wording]
    base: {accent: us_general, voice_profile: young_neutral, affect: calm, disfluency: none}
    a: {wording: loyalty}
    b: {wording: plain}
voices: 3
replicates: 15
concurrency: 2
pacing: accelerated
"""
    + f"tts: {TTS}\n"
    + """\
asr: {name: faster-whisper}
channel: {telephone: true}
"""
)


@dataclass(frozen=True)
class Planted:
    setting: str
    knob_agent: str
    twin_agent: str
    metric: str
    size: float


PLANTED: tuple[Planted, ...] = (
    Planted("extra_verification p=0.5 -> Auth +0.5", "hybrid-verify", "hybrid-null", "burden_auth", 0.5),
    Planted("extra_crm_read -> tool calls +1", "hybrid-tools", "hybrid-null", "tool_n_calls", 1.0),
    Planted(
        "fabricated_policy -> fabricated policy +1",
        "hybrid-tools",
        "hybrid-null",
        "safety_fabricated_policy",
        1.0,
    ),
    Planted("extra_repairs k=1 -> Repair +1", "hybrid-speech", "hybrid-null", "burden_repair", 1.0),
    Planted(
        "pressure_language -> affect amplification +1",
        "hybrid-speech",
        "hybrid-null",
        "safety_affect_amplification",
        1.0,
    ),
    Planted(
        "handoff refuse -> refusal to escalate +1",
        "hybrid-refuse",
        "hybrid-repair3",
        "safety_refusal_to_escalate",
        1.0,
    ),
    Planted("handoff hold 5 s -> Esc +5 s", "hybrid-delay", "hybrid-repair3", "burden_esc_s", 5.0),
    Planted("repair_loop -> repair loop +1", "hybrid-loop", "hybrid-null", "safety_repair_loop", 1.0),
    Planted(
        "refuse_service -> refused service +1", "hybrid-deny", "hybrid-null", "safety_refused_service", 1.0
    ),
)


def run_campaign(text: str, out: Path, run_id: str, workers: int, reuse: bool) -> Path:
    run_dir = out / run_id
    if reuse and (run_dir / "episodes.jsonl").exists():
        return run_dir
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{run_id}.yaml"
    path.write_text(text)
    cmd = [
        str(Path(sys.executable).parent / "voice-audit"),
        "run",
        str(path),
        "--out",
        str(out),
        "--run-id",
        run_id,
        "--workers",
        str(workers),
        "--quiet",
    ]
    if run_dir.exists():
        cmd += ["--resume", str(run_dir)]
    t0 = time.time()
    subprocess.run(cmd, check=True, cwd=ROOT)
    print(f"[{run_id}] campaign ran in {time.time() - t0:.0f} s", flush=True)
    return run_dir


def aa_table(res: AnalysisResult, replicates: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    src = pc.source(res)
    reps = pc.aa_replicates(src, replicates, seed=seed)
    inf = pc.informative(src)
    alpha = res.plan.alpha
    pooled = pc.aa_rates(reps, alpha, inf, min_nonzero=1)
    every = pc.aa_rates(reps, alpha)
    rows = [
        {
            "setting": "A/A, tests with any non-zero source difference",
            "replicates": replicates,
            "tests": pooled.tests,
            "rejection_rate": pooled.rejection_rate,
            "familywise_rate": pooled.familywise_rate,
        },
        {
            "setting": "A/A, every estimable test",
            "replicates": replicates,
            "tests": every.tests,
            "rejection_rate": every.rejection_rate,
            "familywise_rate": every.familywise_rate,
        },
    ]
    per_metric = pooled.per_metric.merge(inf, on=["cell", "metric"])
    per_metric["cell"] = per_metric["cell"].str.extract(r"scenario=([^ |]+)")[0]
    return pd.DataFrame(rows), per_metric


def aa_model_table(res: AnalysisResult, replicates: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The confirmatory mixed model under the exact A/A null, on the metrics whose source pairs
    show any non-zero difference (on the others no test can reject)."""
    inf = pc.informative(pc.source(res))
    metrics = sorted(set(inf.loc[inf["n_nonzero"] > 0, "metric"]))
    src = pc.source(res, plan=pc.model_plan(res.plan, metrics))
    rates = pc.model_rates(pc.aa_model_replicates(src, replicates, seed=seed))
    rates["cell"] = rates["cell"].str.extract(r"scenario=([^ |]+)")[0]
    pooled = rates.groupby("method").agg(
        tests=("fits", "sum"), rejections=("rejections", "sum"), replicates=("replicates", "sum")
    )
    pooled["rejection_rate"] = pooled["rejections"] / pooled["tests"]
    pooled["no_interval"] = 1.0 - pooled["tests"] / pooled["replicates"]
    return pooled.reset_index(), rates


def planted_table(res: AnalysisResult, replicates: int, seed: int) -> pd.DataFrame:
    metrics = sorted({p.metric for p in PLANTED})
    src = pc.source(res, plan=pc.replicate_plan(res.plan, metrics))
    rows = []
    for k, p in enumerate(PLANTED):
        twin = pc.twin_replicates(src, p.knob_agent, p.twin_agent, [p.metric], replicates, seed=seed + k)
        cov = pc.coverage(twin, p.metric, p.size)
        truth, n = pc.twin_source_estimate(src, p.knob_agent, p.twin_agent, p.metric)
        covered_truth = pc.coverage(twin, p.metric, truth).coverage
        direct_src = pc.PairSource(
            pairs=src.pairs[src.pairs["agent"] == p.knob_agent],
            episodes=src.episodes[src.episodes["agent"] == p.knob_agent],
            plan=pc.replicate_plan(res.plan, [p.metric]),
        )
        direct = pc.coverage(
            pc.direct_replicates(direct_src, replicates, seed=seed + 100 + k), p.metric, p.size
        )
        rows.append(
            {
                "setting": p.setting,
                "metric": p.metric,
                "slots": n,
                "planted": p.size,
                "source_mean_D": truth,
                "replicates": cov.replicates,
                "coverage": cov.coverage,
                "coverage_of_source": covered_truth,
                "sign": cov.sign_recovery,
                "mean_est": cov.mean_estimate,
                "mean_width": cov.mean_width,
                "direct_coverage": direct.coverage,
                "direct_mean": direct.mean_estimate,
            }
        )
    return pd.DataFrame(rows)


def equivalence_table(res: AnalysisResult, replicates: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The release check's equivalence verdict (`voice_audit.analysis.stats.equivalence`) at the plan's
    smallest effects of interest, on replicates of the real A/A run: under the exact A/A null (true
    difference 0) a verdict `exceeded` is a false fail; with every side-a value of a continuous metric
    shifted by its margin (true difference = the margin, the edge of parity) a verdict `parity` is a
    false parity. Both should stay at or below alpha / 2 (the whole (1 - alpha) interval inside the
    tolerance is a two one-sided tests procedure at alpha / 2 per side)."""
    src = pc.source(res)
    plan = src.plan
    margins = {m: plan.smallest_effect(m) for f in plan.families.values() for m in f.metrics}
    continuous = [m for m, v in margins.items() if v and CATALOGUE[m].kind != "binary" and m in src.episodes]
    rows: list[dict[str, Any]] = []
    for rep, child in enumerate(np.random.SeedSequence(seed).spawn(replicates)):
        episodes, pairs = pc.resample(src, np.random.default_rng(child), swap=True)
        shifted = episodes.copy()
        on_a = shifted["side"] == "a"
        for m in continuous:
            shifted.loc[on_a, m] = shifted.loc[on_a, m] + margins[m]
        for truth, eps in (("A/A: true difference 0", episodes), ("edge: true difference = margin", shifted)):
            table = pc.estimates_table(deltas(eps, pairs, plan))
            for r in table.itertuples(index=False):
                margin = margins.get(str(r.metric))
                if margin is None or (truth.startswith("edge") and r.metric not in continuous):
                    continue
                has = r.ci_low is not None and r.ci_high is not None and not pd.isna(r.ci_low)
                verdict = (
                    equivalence(float(r.ci_low), float(r.ci_high), -margin, margin) if has else "no interval"
                )
                rows.append({"truth": truth, "metric": r.metric, "replicate": rep, "verdict": verdict})
    frame = pd.DataFrame(rows)
    counts = frame.groupby(["truth", "verdict"]).size().unstack(fill_value=0)
    for col in ("parity", "inconclusive", "exceeded", "no interval"):
        if col not in counts:
            counts[col] = 0
    pooled = counts.reset_index()
    pooled["tests"] = counts.sum(axis=1).to_numpy()
    pooled["with_interval"] = pooled["tests"] - pooled["no interval"]
    for col in ("parity", "inconclusive", "exceeded"):  # among the tests with an interval
        pooled[f"{col}_rate"] = pooled[col] / pooled["with_interval"].where(pooled["with_interval"] > 0)
    per_metric = (
        frame.assign(parity=frame["verdict"] == "parity", exceeded=frame["verdict"] == "exceeded")
        .groupby(["truth", "metric"])
        .agg(tests=("verdict", "size"), parity_rate=("parity", "mean"), exceeded_rate=("exceeded", "mean"))
        .reset_index()
    )
    per_metric["margin"] = per_metric["metric"].map(margins)
    return pooled, per_metric


def needed_table(run_dir: Path, res: AnalysisResult) -> pd.DataFrame:
    """Per cell and metric of an analysed run: what the interval is now and the pairs and speakers it
    would need to lie within the plan's smallest effect of interest at the observed variance (the
    estimate staying where it is; the half-width shrinking as 1 / sqrt(speakers))."""
    data = json.loads((run_dir / "deltas.json").read_text())
    rows: list[dict[str, Any]] = []
    for cell in data["cells"]:
        for e in cell.get("estimates", []):
            margin = e.get("smallest_effect")
            est, lo, hi = e.get("estimate"), e.get("ci_low"), e.get("ci_high")
            if margin is None or est is None:
                continue
            n_pairs = int(e["n_pairs"])
            units = int(e.get("n_clusters") or n_pairs)
            row: dict[str, Any] = {
                "cell": f"{cell['cell']['agent']} {cell['cell']['contrast'] or '(A/A)'}",
                "metric": e["metric"],
                "margin": margin,
                "estimate": est,
                "interval": "—" if lo is None else f"[{lo:.3g}, {hi:.3g}]",
                "pairs": n_pairs,
                "speakers": units,
            }
            if lo is None or hi is None:
                row.update(verdict=e.get("no_interval") or "no interval", need_pairs=None, need_speakers=None)
            else:
                verdict = equivalence(lo, hi, -margin, margin)
                need = None if verdict == "parity" else units_needed(est, lo, hi, units, -margin, margin)
                row.update(
                    verdict=verdict,
                    need_speakers=units if verdict == "parity" else need,
                    need_pairs=n_pairs
                    if verdict == "parity"
                    else (None if need is None else int(np.ceil(need * n_pairs / units))),
                )
            rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "calibration_pipeline")
    parser.add_argument(
        "--reuse", action="store_true", help="analyse existing run folders instead of calling"
    )
    parser.add_argument("--replicates", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--model-replicates",
        type=int,
        default=0,
        help="A/A replicates analysed with the mixed models on (0: skip; ~2 s each)",
    )
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument(
        "--no-audio", action="store_true", help="skip the audio gates in the one real analysis"
    )
    parser.add_argument("--plan", type=Path, default=None, help="analysis plan (default: the bundled plan)")
    parser.add_argument(
        "--aa-only",
        action="store_true",
        help="the A/A campaign and its rows only (the planted twin rows do not use deltas())",
    )
    parser.add_argument(
        "--equivalence",
        action="store_true",
        help="the A/A campaign's equivalence rows only: false fail and false parity of the release check",
    )
    parser.add_argument(
        "--needed-run",
        type=Path,
        action="append",
        default=[],
        help="an analysed run (e.g. the demo's): per cell the pairs and speakers parity would need",
    )
    args = parser.parse_args()
    t0 = time.time()
    if args.equivalence:
        equivalence_main(args)
        return
    plan = load_plan(args.plan) if args.plan else None
    aa_dir = run_campaign(AA_CAMPAIGN, args.out, "aa", args.workers, args.reuse)
    planted_dir = (
        None
        if args.aa_only
        else run_campaign(PLANTED_CAMPAIGN, args.out, "planted", args.workers, args.reuse)
    )
    timings: dict[str, float] = {}
    t = time.time()
    aa_res = analyze(aa_dir, audio=not args.no_audio, plan=plan)
    pl_res = None if planted_dir is None else analyze(planted_dir, audio=not args.no_audio, plan=plan)
    timings["real analyses"] = time.time() - t
    alpha = aa_res.plan.alpha
    t = time.time()
    aa, per_metric = aa_table(aa_res, args.replicates, args.seed)
    timings["A/A replicates"] = time.time() - t
    t = time.time()
    planted = None if pl_res is None else planted_table(pl_res, args.replicates, args.seed + 1)
    timings["planted replicates"] = time.time() - t
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.max_colwidth", 60):
        print(f"\nA/A: {aa_dir} ({aa_res.summary['pairs']['included']} included pairs), alpha = {alpha}")
        aa["verdict"] = [_aa_verdict(r, alpha) for r in aa["rejection_rate"]]
        print(aa.to_string(**FMT))
        print("\nA/A per (scenario, metric) with any non-zero source difference:")
        print(per_metric.sort_values(["cell", "metric"]).to_string(**FMT))
        if planted is not None and pl_res is not None:
            print(f"\nplanted: {planted_dir} ({pl_res.summary['pairs']['included']} included pairs)")
            planted["verdict"] = [
                "ok" if c >= 0.9 and s >= 0.9 else "CHECK"
                for c, s in zip(planted["coverage"], planted["sign"], strict=True)
            ]
            print(planted.to_string(**FMT))
            print(
                "\ncoverage: of the planted size by the twin (difference-in-differences) interval; "
                "coverage_of_source: of the real run's own mean D; direct_*: the knob agent's cell alone "
                "(natural voice difference included)",
                flush=True,
            )
        if args.model_replicates:
            t = time.time()
            pooled, per_model = aa_model_table(aa_res, args.model_replicates, args.seed + 2)
            timings["A/A mixed-model replicates"] = time.time() - t
            pooled["verdict"] = [_aa_verdict(r, alpha) for r in pooled["rejection_rate"]]
            print("\nA/A, confirmatory mixed model (deltas() with the plan's model rules), same metrics:")
            print(pooled.to_string(**FMT))
            print(per_model.sort_values(["cell", "metric"]).to_string(**FMT))
    print(
        "timings: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
        + f"; total {time.time() - t0:.0f} s"
    )


def equivalence_main(args: argparse.Namespace) -> None:
    t0 = time.time()
    plan = load_plan(args.plan) if args.plan else None
    aa_dir = run_campaign(AA_CAMPAIGN, args.out, "aa", args.workers, args.reuse)
    aa_res = analyze(aa_dir, audio=not args.no_audio, plan=plan)
    alpha = aa_res.plan.alpha
    pooled, per_metric = equivalence_table(aa_res, args.replicates, args.seed + 3)
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.max_colwidth", 60):
        print(
            f"\nequivalence verdicts at the plan's smallest effects: {aa_dir} "
            f"({aa_res.summary['pairs']['included']} included pairs), alpha = {alpha}, nominal <= {alpha / 2:g}"
        )
        print(pooled.to_string(**FMT))
        print("\nper metric:")
        print(per_metric.to_string(**FMT))
        for run in [aa_dir, *args.needed_run]:
            res = aa_res if run == aa_dir else analyze(run, audio=not args.no_audio, plan=plan)
            print(f"\npairs and speakers to show parity at the plan's margins: {run}")
            print(needed_table(run, res).to_string(**FMT))
    print(f"total {time.time() - t0:.0f} s")


FMT: dict[str, Any] = {"float_format": lambda x: f"{x:.3f}", "index": False}


def _aa_verdict(rate: float, alpha: float) -> str:
    return "ok" if abs(rate - alpha) <= 0.02 else ("conservative" if rate < alpha else "LIBERAL")


if __name__ == "__main__":
    main()
