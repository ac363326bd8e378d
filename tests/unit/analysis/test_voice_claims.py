"""deltas.json counts a cell's distinct voices beside its pairs, its intervals rest on them, and a
cell with fewer voices than the plan asks for reports its deltas without a paired-disparity claim."""

from __future__ import annotations

import numpy as np
import pandas as pd

from voice_audit.analysis.deltas import deltas
from voice_audit.analysis.disposition import disposition, instances
from voice_audit.analysis.gates import GATES, GateReport
from voice_audit.analysis.plan import load_plan


def cell(n_voices: int, replicates: int, agent: str = "x") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Episodes and pairs of one cell: voice v of a meets voice v of b, each called `replicates` times;
    a carries one more repair turn than b on voice 0 only (a voice effect, not a condition effect)."""
    rng = np.random.default_rng(n_voices * 100 + replicates)
    eps, pairs = [], []
    for v in range(n_voices):
        for r in range(replicates):
            pid = f"{agent}-v{v}-r{r}"
            pairs.append(
                {
                    "pair_id": pid,
                    "agent": agent,
                    "scenario_id": "s",
                    "contrast": "accent",
                    "condition_key_a": "A",
                    "condition_key_b": "B",
                    "included": True,
                    "exclusion_reason": None,
                    "voice_id_a": f"A#v{v}",
                    "voice_id_b": f"B#v{v}",
                }
            )
            for side in ("a", "b"):
                repair = float(side == "a" and v == 0) + float(rng.integers(0, 2))
                eps.append(
                    {
                        "pair_id": pid,
                        "side": side,
                        "scenario_id": "s",
                        "voice_id": f"{'A' if side == 'a' else 'B'}#v{v}",
                        "run_batch": "b",
                        "agent": agent,
                        "burden_repair": repair,
                        "outcome_acceptable": 1.0 if side == "a" else 0.0,
                    }
                )
    return pd.DataFrame(eps), pd.DataFrame(pairs)


def test_deltas_count_voices_and_cluster_on_them() -> None:
    plan = load_plan()
    eps, pairs = cell(3, 12)
    out = deltas(eps, pairs, plan)
    (c,) = out["cells"]
    assert c["n_pairs"] == 36 and c["n_voices"] == 3
    rep = next(e for e in c["estimates"] if e["metric"] == "burden_repair")
    assert rep["n_clusters"] == 3 and "CR2" in rep["method"]
    outcome = next(e for e in c["estimates"] if e["metric"] == "outcome_acceptable")
    assert outcome["n_clusters"] == 3 and outcome["design_effect"] == 12.0
    assert any("36 pairs from 3 distinct voice(s)" in n for n in c["notes"])
    plain = deltas(eps, pairs, plan.model_copy(update={"interval_clusters": "none"}))["cells"][0]
    rep_plain = next(e for e in plain["estimates"] if e["metric"] == "burden_repair")
    assert rep_plain["n_clusters"] is None
    assert rep["ci_high"] - rep["ci_low"] > rep_plain["ci_high"] - rep_plain["ci_low"]


def test_fewer_voices_than_the_plan_asks_for_is_not_a_claim() -> None:
    plan = load_plan()
    assert plan.claims.min_voices_paired_disparity == 3
    e2, p2 = cell(2, 20, agent="two")
    _, p3 = cell(3, 12, agent="three")
    pairs = pd.concat([p2, p3], ignore_index=True)
    by_pair = pd.DataFrame("pass", index=pd.Index(pairs["pair_id"], name="pair_id"), columns=list(GATES))
    report = GateReport(results=[], by_pair=by_pair)
    inst = instances(pairs, report, plan)
    out = disposition(pairs, inst, report, plan)
    cells = {c["cell"]["agent"]: c for c in out["cells"]}
    two = cells["two"]["families"]["path_burden"]
    assert two["claim"] == "construct_validation" and two["voices_supporting"] == 2
    assert any("2 distinct voice(s) < 3" in d for d in two["drivers"])
    three = cells["three"]["families"]["path_burden"]
    assert three["claim"] == "paired_disparity" and three["voices_supporting"] == 3
    note = deltas(e2, p2, plan)["cells"][0]["notes"]
    assert any("2 distinct voice(s) < 3" in n for n in note)


def test_outcome_burden_and_safety_need_both_human_stimulus_gates() -> None:
    """Even a plan that scopes the two human stimulus gates away from them cannot let an outcome,
    burden or safety delta be a claim while raters have not heard and understood the callers."""
    base = load_plan()
    plan = base.model_copy(
        update={
            "gate_scope": {
                **base.gate_scope,
                "persona_perceptibility": ("speech_behaviour",),
                "stimulus_intelligibility": ("speech_behaviour",),
            }
        }
    )
    _, pairs = cell(3, 12)
    for missing in ("persona_perceptibility", "stimulus_intelligibility"):
        by_pair = pd.DataFrame("pass", index=pd.Index(pairs["pair_id"], name="pair_id"), columns=list(GATES))
        by_pair[missing] = "not-evaluable"
        report = GateReport(results=[], by_pair=by_pair)
        out = disposition(pairs, instances(pairs, report, plan), report, plan)
        fams = out["cells"][0]["families"]
        for fam in ("terminal_outcome", "path_burden", "safety_events"):
            assert fams[fam]["claim"] == "diagnostics_only", (missing, fam)
            assert any(d.startswith(missing) for d in fams[fam]["drivers"])
        assert fams["tool_behaviour"]["claim"] == "paired_disparity"


def test_one_voice_per_condition_shows_no_interval_and_is_no_claim() -> None:
    plan = load_plan()
    eps, pairs = cell(1, 20)
    (c,) = deltas(eps, pairs, plan)["cells"]
    assert c["n_voices"] == 1
    assert any("one voice per condition" in n for n in c["notes"])
    rep = next(e for e in c["estimates"] if e["metric"] == "burden_repair")
    # one speaker per condition: the estimate stands, its interval would describe replicates, not speakers
    assert (
        rep["n_clusters"] == 1 and rep["estimate"] is not None and "not for their condition" in rep["method"]
    )
    assert rep["ci_low"] is None and rep["ci_high"] is None and rep["no_interval"] == "no interval: 1 speaker"
    by_pair = pd.DataFrame("pass", index=pd.Index(pairs["pair_id"], name="pair_id"), columns=list(GATES))
    report = GateReport(results=[], by_pair=by_pair)
    fams = disposition(pairs, instances(pairs, report, plan), report, plan)["cells"][0]["families"]
    assert fams["path_burden"]["claim"] == "construct_validation"
    assert any("1 distinct voice(s) < 3" in d for d in fams["path_burden"]["drivers"])
