"""Gate 7: quality annotations are reliable across raters."""

from __future__ import annotations

from typing import Any

import pandas as pd

from voice_audit.analysis.gates.base import GateInputs, GateResult, Verdict, gate_scope, worst
from voice_audit.analysis.metrics.catalogue import QUALITY_LABELS


def annotation_reliability(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    from voice_audit.analysis.agreement import cohen_kappa, krippendorff_alpha, reliability_matrix

    th = inp.plan.gates.annotation
    p = inp.pairs.set_index("pair_id")
    q = inp.labels.quality
    scope = gate_scope(inp.plan, "annotation_reliability")
    if q.empty:
        res = GateResult(
            gate="annotation_reliability",
            verdict="not-evaluable",
            evidence="no quality annotations (ratings/labels.jsonl)",
            thresholds=th.model_dump(),
            scope=scope,
            details={},
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object)
    labels: dict[str, Any] = {}
    for label in [x for x in QUALITY_LABELS if x in set(q["label"])]:
        sub = q[q["label"] == label]
        raters = sorted(sub["rater"].unique())
        if len(raters) < 2:
            labels[label] = {"verdict": "not-evaluable", "why": "fewer than two raters"}
            continue
        if len(raters) == 2:
            wide = sub.pivot_table(index="episode_id", columns="rater", values="value", aggfunc="mean")
            r = cohen_kappa(wide[raters[0]], wide[raters[1]])
            threshold = th.kappa
        else:
            r = krippendorff_alpha(reliability_matrix(sub, "episode_id", "rater", "value"), "ordinal")
            threshold = th.alpha
        v: Verdict = "not-evaluable" if r.value is None else ("pass" if r.value >= threshold else "fail")
        labels[label] = {
            "verdict": v,
            "statistic": r.statistic,
            "value": r.value,
            "threshold": threshold,
            "raters": len(raters),
            "units": r.n_units,
        }
    verdict = worst([x["verdict"] for x in labels.values()])
    res = GateResult(
        gate="annotation_reliability",
        verdict=verdict,
        evidence="; ".join(
            f"{k}: {x['verdict']} ({x.get('statistic', '')} {x.get('value')})" for k, x in labels.items()
        ),
        thresholds=th.model_dump(),
        scope=scope,
        details={"labels": labels},
    )
    return res, pd.Series(verdict, index=p.index, dtype=object)
