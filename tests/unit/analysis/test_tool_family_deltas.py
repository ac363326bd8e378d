"""Every metric the plan names is one the analysis produces; the tool_called_* metrics reach the deltas."""

from __future__ import annotations

import pandas as pd

from voice_audit.analysis.deltas import cell_deltas
from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.plan import load_plan


def test_every_plan_metric_is_in_the_catalogue() -> None:
    plan = load_plan()
    missing = [m for f in plan.families.values() for m in f.metrics if m not in CATALOGUE]
    assert missing == []
    for name in ("verify_identity", "policy_lookup", "escalate_to_human"):
        spec = CATALOGUE[f"tool_called_{name}"]
        assert spec.family == "tool_behaviour" and spec.kind == "binary"


def test_tool_family_gets_all_five_estimates() -> None:
    n = 12
    rows = []
    for i in range(n):
        for side in ("a", "b"):
            rows.append(
                {
                    "pair_id": f"p{i}",
                    "side": side,
                    "scenario_id": "s",
                    "voice_id": f"v{side}",
                    "run_batch": "b1",
                    "agent": "ag",
                    "tool_n_calls": 3.0 + (side == "a") * (i % 2),
                    "tool_n_failed": 0.0,
                    "tool_called_verify_identity": 1.0,
                    "tool_called_policy_lookup": float(side == "a" or i % 3 == 0),
                    "tool_called_escalate_to_human": 0.0,
                }
            )
    plan = load_plan()
    out = cell_deltas(pd.DataFrame(rows), plan, 0)
    tool = {e["metric"]: e for e in out["estimates"] if e["family"] == "tool_behaviour"}
    assert set(tool) == set(plan.families["tool_behaviour"].metrics)
    assert not [x for x in out["notes"] if "tool_called" in x]
    assert tool["tool_called_policy_lookup"]["estimate"] > 0  # a - b: a always called it
