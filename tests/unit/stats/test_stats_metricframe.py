"""PairedMetricFrame: tables agree with the single-metric functions and state the convention."""

from __future__ import annotations

import numpy as np
import pytest

from voice_audit.analysis.stats import PairedMetricFrame, paired_mean_delta, paired_risk_difference
from voice_audit.analysis.stats.calibration import simulate_binary_pairs, simulate_continuous_pairs


def _frame() -> object:
    binary = simulate_binary_pairs(60, 0.1, np.random.default_rng(21))
    burden = simulate_continuous_pairs(60, -0.5, np.random.default_rng(22))
    frame = binary.rename(columns={"y": "refund"})
    frame["repair"] = burden["y"].to_numpy()
    frame["leak"] = binary["y"].to_numpy()[::-1]
    return frame


def test_tables_and_convention() -> None:
    frame = _frame()
    pmf = PairedMetricFrame(
        frame,  # type: ignore[arg-type]
        metrics={"refund": "binary", "repair": "continuous", "leak": "binary"},
        families={"refund": "terminal_outcome", "repair": "path_burden", "leak": "safety_events"},
        corrections={"safety_events": "holm"},
    )
    ci = pmf.delta_ci()
    assert ci.attrs["convention"] == pmf.convention and set(ci["convention"]) == {"a - b"}
    ref = paired_risk_difference(frame, "refund")  # type: ignore[arg-type]
    assert ci.loc["refund", "estimate"] == pytest.approx(ref.estimate)
    assert ci.loc["refund", "ci_low"] == pytest.approx(ref.ci_low)
    assert ci.loc["repair", "estimate"] == pytest.approx(paired_mean_delta(frame, "repair").estimate)  # type: ignore[arg-type]
    by = pmf.by_condition
    assert pmf.delta().to_numpy() == pytest.approx((by["a"] - by["b"]).to_numpy())
    assert pmf.delta().attrs["convention"].startswith("Deltas are condition a minus condition b")
    assert set(pmf.overall.columns) >= {"mean", "n_pairs", "n_dropped"}
    assert len(pmf.estimates()) == 3


def test_inferred_kinds_grouping_and_bad_group() -> None:
    frame = _frame()
    pmf = PairedMetricFrame(frame, metrics=["refund", "repair"], by="scenario_id")  # type: ignore[arg-type]
    assert pmf.kinds == {"refund": "binary", "repair": "continuous"}
    ci = pmf.delta_ci()
    assert ci.index.names == ["scenario_id", "metric"] and len(ci) == 12
    assert ci["family"].tolist()[:2] == ["refund", "repair"]
    with pytest.raises(ValueError, match="pair-level"):
        PairedMetricFrame(frame, metrics=["refund"], by="voice_id")  # type: ignore[arg-type]
