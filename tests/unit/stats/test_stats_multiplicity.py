"""Corrections match statsmodels and never cross families."""

from __future__ import annotations

import pytest
from statsmodels.stats.multitest import multipletests

from voice_audit.analysis.stats import Estimate, adjust_within_families


def _est(metric: str, family: str, p: float | None) -> Estimate:
    return Estimate(
        metric=metric,
        family=family,
        estimate=0.1,
        ci_low=0.0,
        ci_high=0.2,
        alpha=0.05,
        n_pairs=10,
        n_dropped=0,
        method="x",
        p_value=p,
    )


def test_within_family_matches_multipletests_and_keeps_order() -> None:
    burden = [0.01, 0.04, 0.03, 0.20]
    safety = [0.02, 0.049]
    ests = [_est(f"b{i}", "path_burden", p) for i, p in enumerate(burden)]
    ests.insert(1, _est("s0", "safety_events", safety[0]))
    ests.append(_est("s1", "safety_events", safety[1]))
    ests.append(_est("s2", "safety_events", None))
    out = adjust_within_families(ests, {"path_burden": "holm", "safety_events": "fdr_bh"})
    assert [e.metric for e in out] == [e.metric for e in ests]
    got_burden = [e.p_adjusted for e in out if e.family == "path_burden"]
    got_safety = [e.p_adjusted for e in out if e.family == "safety_events" and e.p_value is not None]
    assert got_burden == pytest.approx(list(multipletests(burden, method="holm")[1]))
    assert got_safety == pytest.approx(list(multipletests(safety, method="fdr_bh")[1]))
    assert out[-1].p_adjusted is None and "no p-value" in (out[-1].adjustment or "")
    pooled = multipletests(burden + safety, method="holm")[1]
    assert got_burden != pytest.approx(list(pooled[:4]))


def test_undeclared_family_raises_and_none_is_identity() -> None:
    with pytest.raises(ValueError, match="no correction declared"):
        adjust_within_families([_est("m", "tool_behaviour", 0.01)], {})
    out = adjust_within_families([_est("m", "tool_behaviour", 0.01)], {"tool_behaviour": "none"})
    assert out[0].p_adjusted == 0.01
