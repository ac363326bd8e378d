"""Claim disposition (docs/method/index.md section 6): which claims the evidence supports, and why not more.

Levels, weakest first: `diagnostics_only` < `construct_validation` (validated artifacts turn into
interpretable deltas; what a single gated pair supports) < `paired_disparity` (this agent, this
scenario, this contrast: every pair of the cell passes the gates guarding a family and the cell has
the plan's minimum number of pairs and of distinct voices: replicates of one voice are not
independent evidence about an accent) < `architecture_comparison` (campaign level: at least the
plan's number of agents reach paired_disparity on the same scenario and contrast). A gate that is
not evaluable counts as not passed (plan `not_evaluable_counts_as: fail`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.deltas import CELL_KEYS, cell_label
from voice_audit.analysis.gates import GATES, GateReport
from voice_audit.analysis.plan import AnalysisPlan
from voice_audit.analysis.stats import voice_clusters

LEVELS: tuple[str, ...] = (
    "diagnostics_only",
    "construct_validation",
    "paired_disparity",
    "architecture_comparison",
)


STIMULUS_GATES: tuple[str, ...] = ("persona_perceptibility", "stimulus_intelligibility")
STIMULUS_FAMILIES: tuple[str, ...] = ("terminal_outcome", "path_burden", "safety_events")
"""An outcome, burden or safety delta is a claim about how the agent served a caller it could hear:
raters must hear the intended persona (perceptibility) and understand its words (intelligibility),
whatever a plan's gate_scope says; otherwise the gap may be the text-to-speech engine's."""


def required_gates(plan: AnalysisPlan, family: str) -> tuple[str, ...]:
    """Gates guarding a family: every unscoped gate plus those whose scope names the family, and the
    two human stimulus gates for outcome, burden and safety."""
    return tuple(
        g
        for g in GATES
        if "all" in plan.gate_scope.get(g, ("all",))
        or family in plan.gate_scope.get(g, ())
        or (g in STIMULUS_GATES and family in STIMULUS_FAMILIES)
    )


def cell_voices(pairs: pd.DataFrame) -> int | None:
    """Distinct voice clusters among a cell's pairs (`voice_audit.analysis.stats.voice_clusters`); None when the
    pairs table carries no voices."""
    if not {"voice_id_a", "voice_id_b"} <= set(pairs.columns):
        return None
    known = pairs[pairs["voice_id_a"].notna() & pairs["voice_id_b"].notna()]
    if known.empty:
        return 0
    return len(set(voice_clusters(known["voice_id_a"].tolist(), known["voice_id_b"].tolist()).tolist()))


def instances(pairs: pd.DataFrame, report: GateReport, plan: AnalysisPlan) -> pd.DataFrame:
    """Per pair: claim, supported families, and the gates (or exclusion) that limited it."""
    g = report.by_pair.reindex(pairs["pair_id"]).fillna("not-evaluable")
    passed = {gate: (g[gate] == "pass").to_numpy() for gate in GATES}
    included = pairs["included"].to_numpy(dtype=bool)
    fam_ok = {
        f: np.logical_and.reduce([passed[x] for x in required_gates(plan, f)]) & included
        for f in plan.families
    }
    supported = [",".join(f for f in plan.families if fam_ok[f][i]) for i in range(len(pairs))]
    relevant = sorted({x for f in plan.families for x in required_gates(plan, f)})
    cols = [np.where(passed[x], "", x + "=" + g[x].to_numpy(dtype=str)) for x in relevant]
    limiting = ["; ".join(p for p in parts if p) for parts in zip(*cols, strict=True)]
    reasons = pairs["exclusion_reason"].to_numpy(dtype=object)
    drivers = [
        lim if inc else f"excluded: {why}" for lim, inc, why in zip(limiting, included, reasons, strict=True)
    ]
    claims = ["construct_validation" if s else "diagnostics_only" for s in supported]
    return pd.DataFrame(
        {
            "pair_id": pairs["pair_id"].to_numpy(),
            "claim": claims,
            "supported_families": supported,
            "claim_drivers": drivers,
        }
    )


def disposition(
    pairs: pd.DataFrame, inst: pd.DataFrame, report: GateReport, plan: AnalysisPlan, max_instances: int = 1000
) -> dict[str, Any]:
    p = pairs.merge(inst, on="pair_id")
    p["contrast"] = p["contrast"].fillna("")
    rules = plan.claims
    cells: list[dict[str, Any]] = []
    for key, sub in p.groupby(list(CELL_KEYS), dropna=False, sort=True):
        inc = sub[sub["included"]]
        fam_claims: dict[str, dict[str, Any]] = {}
        for fam in plan.families:
            req = required_gates(plan, fam)
            gv = report.by_pair.reindex(sub["pair_id"])[list(req)]
            not_passed = {g: gv[g].value_counts().to_dict() for g in req if (gv[g] != "pass").any()}
            ok = inc[inc["supported_families"].str.contains(rf"(?:^|,){fam}(?:,|$)", regex=True)]
            ok_pairs = len(ok)
            voices = cell_voices(ok)
            enough_pairs = ok_pairs >= rules.min_pairs_paired_disparity
            enough_voices = voices is None or voices >= rules.min_voices_paired_disparity
            if not_passed or ok_pairs == 0:
                claim = "diagnostics_only"
            elif enough_pairs and enough_voices:
                claim = "paired_disparity"
            else:
                claim = "construct_validation"
            why = [f"{g}: {c}" for g, c in not_passed.items()]
            if claim == "construct_validation":
                if not enough_pairs:
                    why.append(
                        f"{ok_pairs} gated pair(s) < {rules.min_pairs_paired_disparity} needed for a paired-disparity claim"
                    )
                if not enough_voices:
                    why.append(
                        f"{voices} distinct voice(s) < {rules.min_voices_paired_disparity} needed for a paired-disparity "
                        "claim: replicates of one voice are not independent evidence about its condition"
                    )
            fam_claims[fam] = {
                "claim": claim,
                "pairs_supporting": ok_pairs,
                "voices_supporting": voices,
                "drivers": why,
            }
        best = max((c["claim"] for c in fam_claims.values()), key=LEVELS.index, default="diagnostics_only")
        cells.append(
            {
                "cell": dict(zip(CELL_KEYS, map(str, key), strict=True)),
                "label": cell_label(key),
                "claim": best,
                "n_pairs": len(sub),
                "n_included": len(inc),
                "families": fam_claims,
            }
        )
    groups: dict[tuple[str, str], set[str]] = {}
    for c in cells:
        if c["claim"] == "paired_disparity":
            groups.setdefault((c["cell"]["scenario_id"], c["cell"]["contrast"]), set()).add(
                c["cell"]["agent"]
            )
    arch = {
        f"{s} / {ct}": sorted(a)
        for (s, ct), a in groups.items()
        if len(a) >= rules.min_agents_architecture_comparison
    }
    level = (
        "architecture_comparison"
        if arch
        else max((c["claim"] for c in cells), key=LEVELS.index, default="diagnostics_only")
    )
    failed = [f"{r.gate}={r.verdict}" for r in report.results if r.verdict != "pass"]
    out: dict[str, Any] = {
        "plan_sha256": plan.sha256,
        "levels": list(LEVELS),
        "campaign": {
            "claim": level,
            "architecture_comparison": arch or None,
            "gates_not_passed": failed,
            "note": "a population-level claim needs a powered sample; a vendor or architecture comparison needs locked "
            "scenarios, validated metrics and reproducible logs across several systems (docs/method/index.md section 6)",
        },
        "cells": cells,
        "instances_by_claim": inst["claim"].value_counts().to_dict(),
    }
    if len(inst) <= max_instances:
        out["instances"] = inst.to_dict(orient="records")
    else:
        out["instances_note"] = (
            f"{len(inst)} instances: see columns claim, supported_families, claim_drivers in pairs.parquet"
        )
    return out
