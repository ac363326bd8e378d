"""Paired a - b deltas per comparison cell, computed with `voice_audit.analysis.stats`.

A cell is one agent x scenario x contrast x (condition a, condition b): the unit a paired-disparity
claim is about. Within a cell: paired risk difference (binary) or paired mean delta (continuous)
for every plan metric, correction within each family, the path-burden vector, and mixed models
where the plan allows and the sample supports them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.plan import AnalysisPlan
from voice_audit.analysis.stats import (
    CONVENTION,
    CONVENTION_SENTENCE,
    Estimate,
    adjust_within_families,
    linear_mixed,
    logistic_mixed,
    paired_mean_delta,
    paired_rate_ratio,
    paired_risk_difference,
    paired_table,
    voice_clusters,
)
from voice_audit.analysis.stats.pairing import pivot_many

CELL_KEYS: tuple[str, ...] = ("agent", "scenario_id", "contrast", "condition_key_a", "condition_key_b")


def cell_label(key: tuple[object, ...]) -> str:
    agent, scenario, contrast, ca, cb = key
    return f"agent={agent} | scenario={scenario} | contrast={contrast} | a: {ca} | b: {cb}"


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def distinct_pairs(long: pd.DataFrame) -> int | None:
    """Pairs whose calls repeat no other pair of the cell (same voices, the same content on both
    sides: `voice_audit.analysis.metrics.extract.call_content`); None when the content is not known. A replicate
    that repeats another call for call (a deterministic agent, caller and line) adds no evidence,
    yet a paired interval counts it as an independent pair."""
    if "call_content_sha" not in long.columns:
        return None
    sides = long.sort_values(["pair_id", "side"])
    keys = sides.groupby("pair_id", sort=False)[["voice_id", "call_content_sha"]].agg(tuple)
    return len(keys.drop_duplicates())


def distinct_voices(long: pd.DataFrame) -> int | None:
    """Voice clusters of a cell's included pairs (`voice_audit.analysis.stats.voice_clusters`: pairs sharing a
    voice on either side are one cluster; in a planned cell, one voice of each condition and its
    replicates); None when the voices are not known. This, not the number of pairs, is how many
    independent speakers a finding about the contrast rests on."""
    if "voice_id" not in long.columns or long.empty:
        return None
    side = long["side"].tolist()
    if set(side) <= {"a", "b"} and not long["pair_id"].isna().any():
        # The same count without pandas' pivot (a cell's replicates call this thousands of times):
        # each pair's last a and b voice, pairs with both known; the count of clusters does not
        # depend on the order of the pairs.
        last: dict[str, dict[object, object]] = {"a": {}, "b": {}}
        for pid, s, v in zip(long["pair_id"].tolist(), side, long["voice_id"].tolist(), strict=True):
            last[s][pid] = v
        if not last["a"] or not last["b"]:
            return None
        links = [
            (v, last["b"][pid])
            for pid, v in last["a"].items()
            if pid in last["b"] and not pd.isna(v) and not pd.isna(last["b"][pid])
        ]
        if not links:
            return None
        return len(set(voice_clusters([a for a, _ in links], [b for _, b in links]).tolist()))
    sides = long.drop_duplicates(["pair_id", "side"], keep="last").pivot(
        index="pair_id", columns="side", values="voice_id"
    )
    if not {"a", "b"} <= set(sides.columns):
        return None
    sides = sides.dropna()
    if sides.empty:
        return None
    return len(set(voice_clusters(sides["a"].tolist(), sides["b"].tolist()).tolist()))


def speakers_text(n_voices: int) -> str:
    """What an estimate without an interval shows in place of [x, x]."""
    return f"no interval: {n_voices} speaker{'s' if n_voices != 1 else ''}"


def _without_interval(e: Estimate, text: str, plan: AnalysisPlan) -> Estimate:
    """Fewer speakers than the plan's minimum: the estimate stands, the interval (and test) does not:
    the unit of evidence about an accent is the speaker, and replicates of one speaker cannot stand in."""
    if e.estimate is None:
        return e
    need = plan.claims.min_voices_paired_disparity
    return e.model_copy(
        update={
            "ci_low": None,
            "ci_high": None,
            "p_value": None,
            "notes": (
                *e.notes,
                f"{text} (the plan needs {need} per cell): the estimate speaks for these speakers' calls; an "
                "interval over replicates of so few speakers would describe the replicates, not the condition",
            ),
        }
    )


def effect_fields(e: Estimate, margin: float | None) -> dict[str, Any]:
    """The plan's smallest effect of interest next to the estimate, and the estimate's size against it
    (|estimate| / margin: 1 is the smallest difference that matters); what findings are ranked by."""
    size = abs(e.estimate) / margin if margin and e.estimate is not None else None
    return {"smallest_effect": margin, "effect_size": _clean(size)}


def rate_ratio(paired: Any, e: Estimate, alpha: float, no_interval: str | None) -> dict[str, Any]:
    """The lower condition's rate over the higher's (the four-fifths rule's quantity: it holds when
    either condition's rate is at least 80% of the other's), with its interval on the same
    effective table as the risk difference."""
    if e.estimate is None or paired.n_pairs == 0:
        return {"estimate": None, "ci_low": None, "ci_high": None, "ratio": None, "method": "no pairs"}
    n11, n10, n01, n00 = paired_table(paired.a, paired.b)
    b_lower = n11 + n01 <= n11 + n10  # rate b <= rate a: b over a
    table = (n11, n01, n10, n00) if b_lower else (n11, n10, n01, n00)
    ratio, lo, hi = paired_rate_ratio(*table, alpha, e.design_effect or 1.0)
    which = "rate b / rate a" if b_lower else "rate a / rate b"
    method = f"{which} (the lower rate over the higher), MOVER-R over Wilson intervals" + (
        f" on the table divided by the design effect {e.design_effect:.3g}" if e.design_effect else ""
    )
    if no_interval is not None:
        lo = hi = None
    return {
        "estimate": _clean(ratio),
        "ci_low": _clean(lo),
        "ci_high": _clean(hi),
        "ratio": which,
        "method": method if ratio is not None else f"{which}: undefined (neither condition has the outcome)",
    }


def cell_deltas(long: pd.DataFrame, plan: AnalysisPlan, n_excluded: int) -> dict[str, Any]:
    """Estimates for one cell; `long` holds the included episodes (pair_id, side, ... metrics)."""
    estimates: list[Estimate] = []
    notes: list[str] = []
    wanted = [
        m for fam in plan.families.values() for m in fam.metrics if m in CATALOGUE and m in long.columns
    ]
    paired = pivot_many(long, list(dict.fromkeys(wanted)))
    for family, fam in plan.families.items():
        for metric in fam.metrics:
            spec = CATALOGUE.get(metric)
            if spec is None or metric not in long.columns:
                notes.append(f"{metric}: not a metric this analysis produces; skipped")
                continue
            clustered = plan.interval_clusters == "voice"
            if spec.kind == "binary":
                est = paired_risk_difference(
                    paired[metric],
                    metric,
                    family=family,
                    alpha=plan.alpha,
                    interval=plan.binary_interval,
                    cluster_by_voice=clustered,
                )
            else:
                est = paired_mean_delta(
                    paired[metric],
                    metric,
                    family=family,
                    alpha=plan.alpha,
                    interval=plan.continuous_interval,
                    cluster_by_voice=clustered,
                )
            if n_excluded:
                est = est.model_copy(
                    update={
                        "notes": (
                            *est.notes,
                            f"{n_excluded} pair(s) of this cell excluded before pairing (see pairs.parquet)",
                        )
                    }
                )
            estimates.append(est)
    n_pairs = long["pair_id"].nunique()
    n_distinct = distinct_pairs(long)
    n_voices = distinct_voices(long)
    clustered = plan.interval_clusters == "voice"
    no_interval = (
        speakers_text(n_voices)
        if clustered and n_voices is not None and n_voices < plan.claims.min_voices_paired_disparity
        else None
    )
    if no_interval is not None:
        estimates = [_without_interval(e, no_interval, plan) for e in estimates]
    estimates = adjust_within_families(estimates, {f: spec.correction for f, spec in plan.families.items()})
    models: list[dict[str, Any]] = []
    if n_voices is not None:
        if clustered and n_voices == 1:
            notes.append(
                f"{n_pairs} pairs from one voice per condition: replicates of one voice are not independent "
                "evidence about its condition, and no interval over voices exists for one; the estimates are "
                "shown without an interval (no interval: 1 speaker)"
            )
        elif clustered:
            notes.append(
                f"{n_pairs} pairs from {n_voices} distinct voice(s): replicates of one voice are not independent "
                f"evidence about its condition, so the intervals are computed over the {n_voices} voice cluster(s) "
                "(CR2 t on G - 1 df for means, a design-effect-scaled score interval for risk differences)"
            )
        else:
            notes.append(
                f"{n_pairs} pairs from {n_voices} distinct voice(s); the plan's interval_clusters: none counts every "
                "pair as independent, so the intervals are narrower than the voices support"
            )
        need = plan.claims.min_voices_paired_disparity
        if n_voices < need:
            notes.append(
                f"{n_voices} distinct voice(s) < {need} the plan needs before a delta of this cell can support a "
                "claim: reported, not a claim (add voices, not replicates)"
            )
    if n_distinct is not None and n_distinct < n_pairs:
        tail = (
            "the voice-clustered intervals keep such repeats inside their voice's cluster"
            if clustered and n_voices is not None
            else f"the intervals, which count every pair as independent, are narrower than the {n_distinct} "
            "distinct pairs support"
        )
        notes.append(
            f"{n_pairs - n_distinct} of {n_pairs} pairs repeat another pair of this cell call for call (same voices, "
            "the same words and tool calls on both sides); where nothing varies between replicates (no line "
            f"noise, a deterministic agent) a repeat adds no evidence, and {tail}; a noisy line (channel "
            "snr_db, packet_loss) or more voices give replicates their variation"
        )
    mm = plan.mixed_models
    if not mm.enabled:
        notes.append("mixed models disabled by the plan")
    elif n_pairs < mm.min_pairs:
        notes.append(
            f"mixed models skipped: {n_pairs} pairs < {mm.min_pairs} (the sample does not support them)"
        )
    elif len(long) > mm.max_episodes:
        notes.append(
            f"mixed models skipped: {len(long)} episodes > plan max_episodes {mm.max_episodes}; paired estimates stand alone"
        )
    else:
        for est in estimates:
            if est.n_pairs < mm.min_pairs or est.estimate is None:
                continue
            spec = CATALOGUE[est.metric]
            fit = logistic_mixed if spec.kind == "binary" else linear_mixed
            try:
                models.append(
                    fit(long, est.metric, family=est.family, alpha=plan.alpha).model_dump(mode="json")
                )
            except (ValueError, np.linalg.LinAlgError) as exc:
                models.append({"metric": est.metric, "error": f"{type(exc).__name__}: {exc}"})
    burden = {
        m: next((e.estimate for e in estimates if e.metric == c), None)
        for m, c in (("repair", "burden_repair"), ("auth", "burden_auth"), ("esc", "burden_esc_s"))
    }
    return {
        "n_pairs": int(n_pairs),
        "n_pairs_distinct": n_distinct,
        "n_voices": n_voices,
        "convention": CONVENTION,
        "delta_B": {
            "components": burden,
            "convention": CONVENTION,
            "note": "componentwise (Repair, Auth, Esc); a negative component means condition b carried more burden",
        },
        "estimates": [
            {
                **{k: _clean(v) for k, v in e.model_dump(mode="json").items()},
                "higher_is_worse": CATALOGUE[e.metric].higher_is_worse,
                "proxy": CATALOGUE[e.metric].proxy,
                "sentence": e.sentence(higher_is_worse=CATALOGUE[e.metric].higher_is_worse is not False),
                **effect_fields(e, plan.smallest_effect(e.metric)),
                "no_interval": no_interval if e.estimate is not None else None,
                **(
                    {"rate_ratio": rate_ratio(paired[e.metric], e, plan.alpha, no_interval)}
                    if CATALOGUE[e.metric].kind == "binary" and e.metric in paired
                    else {}
                ),
            }
            for e in estimates
        ],
        "models": models,
        "notes": notes,
    }


def deltas(episodes: pd.DataFrame, pairs: pd.DataFrame, plan: AnalysisPlan) -> dict[str, Any]:
    """deltas.json content: one block per cell, the convention stated at every level."""
    p = pairs.copy()
    p["contrast"] = p["contrast"].fillna("")
    cells: list[dict[str, Any]] = []
    side_cols = ["pair_id", "side", "scenario_id", "voice_id", "run_batch", "agent"]
    side_cols += [c for c in ("call_content_sha",) if c in episodes.columns]
    metric_cols = sorted({m for f in plan.families.values() for m in f.metrics if m in episodes.columns})
    ep = episodes[[*side_cols, *metric_cols]]
    for key, sub in p.groupby(list(CELL_KEYS), dropna=False, sort=True):
        inc = sub[sub["included"]]
        long = ep[ep["pair_id"].isin(inc["pair_id"])]
        block = {
            "cell": dict(zip(CELL_KEYS, map(str, key), strict=True)),
            "label": cell_label(key),
            "n_pairs_total": len(sub),
            "n_pairs_excluded": int((~sub["included"]).sum()),
        }
        if inc.empty:
            block.update(
                {
                    "n_pairs": 0,
                    "n_voices": 0,
                    "estimates": [],
                    "models": [],
                    "notes": ["no included pairs: nothing to estimate"],
                }
            )
        else:
            block.update(cell_deltas(long, plan, int((~sub["included"]).sum())))
        cells.append(block)
    return {
        "plan_sha256": plan.sha256,
        "convention": CONVENTION,
        "convention_text": CONVENTION_SENTENCE,
        "cells": cells,
    }
