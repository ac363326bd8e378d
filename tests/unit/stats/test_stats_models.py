"""Confirmatory models: sign in the a - b convention, fallbacks stated, degenerate data not estimable."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from voice_audit.analysis.stats import linear_mixed, logistic_mixed, pivot_pairs
from voice_audit.analysis.stats.calibration import simulate_binary_pairs, simulate_continuous_pairs


def test_logistic_mixed_recovers_sign_and_states_method() -> None:
    frame = simulate_binary_pairs(150, 0.2, np.random.default_rng(11), discordance=(0.3, 0.5))
    fit = logistic_mixed(frame, "y")
    assert fit.method.startswith("BinomialBayesMixedGLM") and fit.fallback_reason is None
    assert fit.coefficient is not None and fit.coefficient > 0 and fit.excludes_zero
    assert set(fit.components) == {"scenario_id", "voice_id", "run_batch"}
    assert fit.convention == "a - b" and "a vs b" in fit.scale
    flipped = frame.assign(side=frame["side"].map({"a": "b", "b": "a"}))
    assert logistic_mixed(flipped, "y").coefficient < 0  # type: ignore[operator]


def test_gee_fallback_when_no_component_varies() -> None:
    frame = simulate_binary_pairs(80, 0.2, np.random.default_rng(12), discordance=(0.3, 0.5))
    flat = frame.assign(scenario_id="s", voice_id="v", run_batch="r")
    fit = logistic_mixed(flat, "y")
    assert (
        fit.method.startswith("GEE") and fit.fallback_reason == "no variance component varies in these data"
    )
    assert fit.coefficient is not None and fit.coefficient > 0


def test_gee_on_request_and_constant_outcome_not_estimable() -> None:
    frame = simulate_binary_pairs(40, 0.0, np.random.default_rng(13))
    assert logistic_mixed(frame, "y", force_gee=True).fallback_reason == "GEE requested"
    const = logistic_mixed(frame.assign(y=0.0), "y")
    assert (
        const.method == "not estimable"
        and const.coefficient is None
        and "constant" in (const.fallback_reason or "")
    )


def test_separation_is_flagged() -> None:
    frame = simulate_binary_pairs(30, 0.0, np.random.default_rng(14))
    frame["y"] = (frame["side"] == "a").astype(float)
    fit = logistic_mixed(frame, "y")
    assert fit.method == "not estimable" and fit.coefficient is None
    assert fit.fallback_reason and "perfectly separated" in fit.fallback_reason


def test_linear_mixed_pair_only_equals_paired_t() -> None:
    frame = simulate_continuous_pairs(40, -0.6, np.random.default_rng(15))
    fit = linear_mixed(frame, "y", components=("pair_id",))
    paired = pivot_pairs(frame, "y")
    assert fit.coefficient == pytest.approx(paired.diff.mean())
    se = (fit.ci_high - fit.ci_low) / (2 * stats.norm.ppf(0.975))  # type: ignore[operator]
    assert se == pytest.approx(stats.sem(paired.diff), rel=0.02)
    assert fit.coefficient < 0 and fit.scale.startswith("mean difference")


def test_linear_mixed_full_components_and_degenerate() -> None:
    frame = simulate_continuous_pairs(40, 0.8, np.random.default_rng(16), noise="counts")
    fit = linear_mixed(frame, "y")
    assert fit.coefficient == pytest.approx(pivot_pairs(frame, "y").diff.mean())
    assert "pair_id" in fit.components and "residual" in fit.variance_components
    assert linear_mixed(frame.assign(y=1.0), "y").method == "not estimable"
