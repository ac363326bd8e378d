"""Sign-flip randomization interval: exact test inversion, consistency of p and interval, limits."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.stats import paired_mean_delta
from voice_audit.analysis.stats.signflip import (
    EXACT_MAX_PAIRS,
    flip_sums,
    interval_from_flips,
    normal_limit_interval,
    signflip_interval,
)


def _all_flips(n: int) -> tuple[np.ndarray, np.ndarray]:
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    return signs, signs.sum(axis=1)


def _brute_p(diff: np.ndarray, signs: np.ndarray, delta: float) -> float:
    x = diff - delta
    extreme = np.count_nonzero(np.abs(signs @ x) >= abs(x.sum()) - 1e-12)
    return (1 + extreme) / (len(signs) + 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interval_ends_are_where_the_brute_force_test_starts_rejecting(seed: int) -> None:
    rng = np.random.default_rng(seed)
    diff = np.round(rng.standard_t(3, 11), 2)
    diff[:3] = 0.0  # ties at zero, as burden differences have
    signs, s = _all_flips(len(diff))
    lo, hi, p = interval_from_flips(diff, signs @ diff, s, alpha=0.05)
    assert p == pytest.approx(_brute_p(diff, signs, 0.0))
    eps = 1e-7 * max(1.0, abs(lo), abs(hi))
    assert _brute_p(diff, signs, lo - eps) <= 0.05 < _brute_p(diff, signs, lo + eps)
    assert _brute_p(diff, signs, hi + eps) <= 0.05 < _brute_p(diff, signs, hi - eps)
    assert lo <= diff.mean() <= hi


def test_p_above_alpha_exactly_when_zero_is_inside() -> None:
    rng = np.random.default_rng(5)
    seen = set()
    for rep in range(300):
        diff = rng.normal(0.35, 1.0, 20) * (rng.random(20) < 0.6)
        lo, hi, p = signflip_interval(diff, 0.05, n_flips=999, seed=rep)
        inside = lo <= 0.0 <= hi
        assert inside == (p > 0.05)
        seen.add(inside)
    assert seen == {True, False}


def test_flip_sums_are_sums_of_random_signs() -> None:
    diff = np.arange(1.0, 41.0)
    a, s = flip_sums(diff, 20000, np.random.default_rng(0))
    assert np.all(np.abs(s) <= 40) and np.all((s + 40) % 2 == 0)
    assert abs(a.mean()) < 4 * np.sqrt(np.dot(diff, diff) / 20000)
    assert np.var(a) == pytest.approx(np.dot(diff, diff), rel=0.05)
    assert np.var(s) == pytest.approx(40, rel=0.05)
    assert np.corrcoef(a, s)[0, 1] == pytest.approx(diff.sum() / np.sqrt(40 * np.dot(diff, diff)), abs=0.03)


def test_normal_limit_agrees_with_monte_carlo_on_well_behaved_data() -> None:
    diff = np.random.default_rng(3).normal(0.05, 1.0, 3000)
    mc = signflip_interval(diff, 0.05, n_flips=4999, seed=1)
    lim = normal_limit_interval(diff, 0.05)
    assert mc[0] == pytest.approx(lim[0], abs=0.01) and mc[1] == pytest.approx(lim[1], abs=0.01)
    assert mc[2] == pytest.approx(lim[2], abs=0.02)


def _frame(a: np.ndarray, b: np.ndarray) -> pd.DataFrame:
    rows = []
    for i in range(len(a)):
        rows.append(
            dict(pair_id=f"p{i}", side="a", scenario_id="s", voice_id="v", run_batch="r", agent="g", m=a[i])
        )
        rows.append(
            dict(pair_id=f"p{i}", side="b", scenario_id="s", voice_id="v", run_batch="r", agent="g", m=b[i])
        )
    return pd.DataFrame(rows)


def test_paired_mean_delta_signflip_is_seeded_and_says_how_it_was_computed() -> None:
    rng = np.random.default_rng(9)
    b = rng.normal(5, 1, 40)
    a = b + rng.normal(0.5, 1, 40)
    one = paired_mean_delta(_frame(a, b), "m", n_boot=1999, seed=4)
    two = paired_mean_delta(_frame(a, b), "m", n_boot=1999, seed=4)
    other = paired_mean_delta(_frame(a, b), "m", n_boot=1999, seed=5)
    assert one == two and one.ci_low != other.ci_low
    assert (
        one.method
        == "paired mean delta, sign-flip randomization interval (B=1999 sign flips, seed=4, test inverted)"
    )
    assert one.ci_low is not None and one.ci_high is not None and one.ci_low < one.estimate < one.ci_high  # type: ignore[operator]
    big_b = rng.normal(5, 1, EXACT_MAX_PAIRS + 1)
    big = paired_mean_delta(_frame(big_b + 0.1, big_b), "m")
    assert big.method.endswith(f"(normal limit: n > {EXACT_MAX_PAIRS} pairs)")


def test_too_few_flips_for_alpha_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 100"):
        signflip_interval(np.array([1.0, -2.0, 3.0]), 0.01, n_flips=50)
