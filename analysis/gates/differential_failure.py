"""The differential-failure gate (METHOD section 8): harness-side missing data balanced across conditions."""

from __future__ import annotations

import pandas as pd

from voice_audit.analysis.gates import missingness
from voice_audit.analysis.gates.base import GateInputs, GateResult, gate_scope, worst


def differential_failure(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    th = inp.plan.gates.failure
    cells, by_pair = missingness.differential_failure(
        inp.pairs, alpha=th.alpha, max_rate_difference=th.max_rate_difference
    )
    res = GateResult(
        gate="differential_failure",
        verdict=worst([c.verdict for c in cells]) if cells else "not-evaluable",
        evidence=missingness.evidence(cells, th.max_rate_difference, th.alpha),
        thresholds=th.model_dump(),
        scope=gate_scope(inp.plan, "differential_failure"),
        details={"cells": [c.as_json() for c in cells]},
    )
    return res, by_pair
