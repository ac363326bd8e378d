"""Gate 3: raters hear the intended persona contrast; acoustic separability as a diagnostic."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.gates.base import GateInputs, GateResult, gate_scope, worst
from voice_audit.analysis.metrics.table import map_unique


def separability(inp: GateInputs) -> dict[str, Any]:
    """Diagnostic only: how far apart a and b callers are on caller speaking rate (words/s of the
    caller's utterances) per contrast, as an AUC; 0.5 = indistinguishable on this cue."""
    from scipy.stats import mannwhitneyu

    utt = inp.ing.table.of_type("caller_utterance_start", columns=["ep", "text", "duration_ms"])
    words = map_unique(utt["text"], lambda t: len(t.split()))
    secs = utt["duration_ms"] / 1000.0
    rate = (words.groupby(utt["ep"]).sum() / secs.groupby(utt["ep"]).sum()).replace([np.inf], np.nan)
    r = inp.ing.table.per_episode(rate, None)
    ep = inp.episodes[["episode_id", "contrast", "side"]].assign(
        caller_wps=r.reindex(inp.episodes["episode_id"]).to_numpy()
    )
    out: dict[str, Any] = {}
    for contrast, sub in ep.groupby("contrast"):
        xa = sub.loc[sub["side"] == "a", "caller_wps"].dropna()
        xb = sub.loc[sub["side"] == "b", "caller_wps"].dropna()
        if len(xa) and len(xb):
            u = float(mannwhitneyu(xa, xb).statistic)
            out[str(contrast)] = {
                "cue": "caller words per second",
                "auc": u / (len(xa) * len(xb)),
                "n_a": len(xa),
                "n_b": len(xb),
            }
    return out


def persona_perceptibility(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    from voice_audit.analysis.agreement import perceptibility

    th = inp.plan.gates.perceptibility
    p = inp.pairs.set_index("pair_id")
    ratings = inp.labels.perceptibility
    diag = {"acoustic_separability": separability(inp)}
    if ratings.empty:
        res = GateResult(
            gate="persona_perceptibility",
            verdict="not-evaluable",
            evidence="no perceptibility ratings in ratings/labels.jsonl; acoustic separability reported as a diagnostic only",
            thresholds=th.model_dump(),
            scope=gate_scope(inp.plan, "persona_perceptibility"),
            details={},
            diagnostics=diag,
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object)
    per_axis = perceptibility(
        ratings, alpha=inp.plan.alpha, min_raters=th.min_raters, min_accuracy=th.min_accuracy
    )
    axis_verdict = {k: v.verdict for k, v in per_axis.items()}
    pair_v = p["contrast"].map(
        lambda c: worst([axis_verdict.get(ax, "not-evaluable") for ax in str(c).split(",") if ax])
    )
    verdict = worst(list(pair_v)) if len(pair_v) else "not-evaluable"
    res = GateResult(
        gate="persona_perceptibility",
        verdict=verdict,
        evidence="; ".join(f"{k}: {v.verdict} ({v.evidence})" for k, v in per_axis.items()),
        thresholds=th.model_dump(),
        scope=gate_scope(inp.plan, "persona_perceptibility"),
        details={"axes": {k: v.model_dump() for k, v in per_axis.items()}},
        diagnostics=diag,
    )
    return res, pair_v.astype(object)
