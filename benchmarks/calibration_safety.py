"""Calibration of the two safety events `safety_repair_loop` and `safety_refused_service`, at a
size that runs in about ten minutes on 2 cores.

Run: ``nice .venv/bin/python benchmarks/calibration_safety.py [--out runs/calibration_safety]
[--reuse] [--aa-calls 4] [--planted-calls 5] [--replicates 200]``.

The same machinery as ``benchmarks/calibration_pipeline.py`` (whose planted campaign carries the
two knobs too, at full size), on two smaller real campaigns (accelerated pacing, the full
benchmark's three recorded US speakers as callers, faster-whisper in the hybrid reference agent,
calibration oracle as the agent's detector):

* ``aa``: the A/A campaign of the full benchmark on the refund scenario, 3 voices x ``--aa-calls``.
  Its replicate analyses run twice on the *same* calls: with the frozen plan as it is now, and
  with the plan's safety family as it was before the two metrics were added. The rates must
  agree: adding two tests to a Holm family may only make the family-wise rate more conservative.
* ``planted``: loyalty wording (target, side a) vs plain on the refund scenario, 3 speakers x
  ``--planted-calls``, served by a knob-free twin (``hybrid-null``) and by ``hybrid-loop``
  (``repair_loop`` knob: keeps asking the target to repeat) and ``hybrid-deny`` (``refuse_service``
  knob: declines the target's eligible refund at the offer), all on the same planned pairs.
  Difference-in-differences D = (a - b | knob) - (a - b | twin) per slot, planted size +1 (the
  knob fires on every target call that reaches its point; the twin neither loops nor refuses).

Criteria: coverage of the planted size >= 0.9 and sign >= 0.9; A/A rejection rate within alpha
+- 2 points and equal with and without the new metrics.
Recorded 2026-12-04 on the earlier eSpeak campaigns (female_adult vs female_older, three eSpeak
variants per condition; not yet re-run on the recorded speakers), with the defaults
(``--aa-calls 4 --planted-calls 5 --replicates 200``, niced beside other jobs, load 9-19 on 2
cores; campaigns 141 s and 475 s, 1045 s in all). A/A, 12 pairs: the
same rates with and without the two metrics, 0.050 over the 200 tests whose source pairs differ
at all (only burden_time_to_resolution_s does), 0.002 over every estimable test (4800 before,
5200 after), family-wise 0.000 both; neither event fired on any of the 24 A/A calls. Planted, 15
slots each: repair_loop fired on 15/15 target calls of the knob agent and 0/15 of its b side and
of the twin, D = 1.000, coverage 1.000, sign 1.000; refuse_service the same (10 of its 15 target
calls then ended escalated on the caller's request for a human, 5 unresolved: the event fires
whatever follows). D is identical on every slot, so the replicate intervals have zero width, as
for the full benchmark's other deterministic knobs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
from calibration_pipeline import (
    AA_CAMPAIGN,
    FMT,
    PLANTED,
    PLANTED_AGENTS,
    ROOT,
    TTS,
    _aa_verdict,
    _agent,
    run_campaign,
)

from voice_audit.analysis import pipeline_calibration as pc
from voice_audit.analysis.pipeline import AnalysisResult, analyze
from voice_audit.analysis.plan import AnalysisPlan

NEW_METRICS = ("safety_repair_loop", "safety_refused_service")
KNOB_AGENTS = ("null", "loop", "deny")

PLANTED_CAMPAIGN = """\
name: calib-safety-planted
description: "Planted repair loop and refused service for side a (loyalty wording), hybrid agents in calibration mode, with a twin"
seed: 7003
batch: calib-safety-planted
scenarios: [refund_duplicate_charge]
agents:
{agents}pairs:
  - name: "wording: loyalty (target) vs plain"
    contrast: [wording]
    base: {{accent: us_general, voice_profile: young_neutral, affect: calm, disfluency: none}}
    a: {{wording: loyalty}}
    b: {{wording: plain}}
voices: 3
replicates: {replicates}
concurrency: 2
pacing: accelerated
tts: {tts}
asr: {{name: faster-whisper}}
channel: {{telephone: true}}
"""


def without_new_metrics(plan: AnalysisPlan) -> AnalysisPlan:
    """The plan as it was before the two safety metrics joined the safety family."""
    fams = {
        name: fam.model_copy(update={"metrics": tuple(m for m in fam.metrics if m not in NEW_METRICS)})
        for name, fam in plan.families.items()
    }
    return plan.model_copy(update={"families": fams})


def aa_rows(
    res: AnalysisResult, plan: AnalysisPlan, label: str, replicates: int, seed: int
) -> list[dict[str, object]]:
    src = pc.source(res, plan=pc.replicate_plan(plan))
    reps = pc.aa_replicates(src, replicates, seed=seed)
    inf = pc.informative(src)
    pooled = pc.aa_rates(reps, plan.alpha, inf, min_nonzero=1)
    every = pc.aa_rates(reps, plan.alpha)
    return [
        {"plan": label, "tests": "any non-zero source difference", "n": pooled.tests,
         "rejection_rate": pooled.rejection_rate, "familywise_rate": pooled.familywise_rate},
        {"plan": label, "tests": "every estimable test", "n": every.tests,
         "rejection_rate": every.rejection_rate, "familywise_rate": every.familywise_rate},
    ]  # fmt: skip


def planted_rows(res: AnalysisResult, replicates: int, seed: int) -> pd.DataFrame:
    rows = []
    mine = [p for p in PLANTED if p.metric in NEW_METRICS]
    src = pc.source(res, plan=pc.replicate_plan(res.plan, [p.metric for p in mine]))
    for k, p in enumerate(mine):
        twin = pc.twin_replicates(src, p.knob_agent, p.twin_agent, [p.metric], replicates, seed=seed + k)
        cov = pc.coverage(twin, p.metric, p.size)
        truth, n = pc.twin_source_estimate(src, p.knob_agent, p.twin_agent, p.metric)
        eps = src.episodes
        rate = {
            (agent, side): float(eps.loc[(eps["agent"] == agent) & (eps["side"] == side), p.metric].mean())
            for agent in (p.knob_agent, p.twin_agent)
            for side in ("a", "b")
        }
        rows.append(
            {
                "setting": p.setting,
                "slots": n,
                "planted": p.size,
                "knob_a": rate[(p.knob_agent, "a")],
                "knob_b": rate[(p.knob_agent, "b")],
                "twin_a": rate[(p.twin_agent, "a")],
                "twin_b": rate[(p.twin_agent, "b")],
                "source_mean_D": truth,
                "replicates": cov.replicates,
                "coverage": cov.coverage,
                "sign": cov.sign_recovery,
                "mean_est": cov.mean_estimate,
                "mean_width": cov.mean_width,
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "calibration_safety")
    parser.add_argument(
        "--reuse", action="store_true", help="analyse existing run folders instead of calling"
    )
    parser.add_argument("--aa-calls", type=int, default=4, help="replicates per voice, A/A campaign")
    parser.add_argument("--planted-calls", type=int, default=5, help="replicates per voice, planted campaign")
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    t0 = time.time()
    aa_text = AA_CAMPAIGN.replace("replicates: 10", f"replicates: {args.aa_calls}").replace(
        "scenarios: [refund_duplicate_charge, outage_support, plan_correction]",
        "scenarios: [refund_duplicate_charge]",
    )
    agents = "".join(_agent(f"hybrid-{n}", PLANTED_AGENTS[n]) for n in KNOB_AGENTS)
    planted_text = PLANTED_CAMPAIGN.format(agents=agents, replicates=args.planted_calls, tts=TTS)
    aa_dir = run_campaign(aa_text, args.out, "aa", args.workers, args.reuse)
    planted_dir = run_campaign(planted_text, args.out, "planted", args.workers, args.reuse)
    t = time.time()
    aa_res = analyze(aa_dir, audio=False)
    pl_res = analyze(planted_dir, audio=False)
    t_analyse = time.time() - t
    alpha = aa_res.plan.alpha
    aa = pd.DataFrame(
        aa_rows(
            aa_res,
            without_new_metrics(aa_res.plan),
            "before (without the two metrics)",
            args.replicates,
            args.seed,
        )
        + aa_rows(aa_res, aa_res.plan, "after (frozen plan)", args.replicates, args.seed)
    )
    aa["verdict"] = [_aa_verdict(float(r), alpha) for r in aa["rejection_rate"]]
    planted = planted_rows(pl_res, args.replicates, args.seed + 1)
    planted["verdict"] = [
        "ok" if c >= 0.9 and s >= 0.9 else "CHECK"
        for c, s in zip(planted["coverage"], planted["sign"], strict=True)
    ]
    new = aa_res.metrics[list(NEW_METRICS)].agg(["mean", "count"]).T
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(f"\nA/A: {aa_dir} ({aa_res.summary['pairs']['included']} included pairs), alpha = {alpha}")
        print(aa.to_string(**FMT))
        print("\nA/A calls: the two new metrics (rate over calls, calls measured)")
        print(new.to_string(float_format=lambda x: f"{x:.3f}"))
        print(f"\nplanted: {planted_dir} ({pl_res.summary['pairs']['included']} included pairs)")
        print(planted.to_string(**FMT))
        print(
            "\nknob_*/twin_*: rate of the metric per agent and side (a = target); coverage of the planted size"
        )
    print(f"timings: analyses {t_analyse:.0f} s; total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
