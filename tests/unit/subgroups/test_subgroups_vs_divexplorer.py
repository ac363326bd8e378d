"""Itemsets, supports, means, divergences and t-values agree with DivExplorer 0.2.6 on the same table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from divexplorer import DivergenceExplorer

from voice_audit.analysis.subgroups import Subgroups, mine

SUPPORT = 0.02


def _index(result: Subgroups) -> dict[frozenset[str], int]:
    return {fs: i for i, fs in enumerate(result.lattice.itemsets())}


@pytest.mark.parametrize("strategy", ["topdown", "bottomup"])
def test_quantitative_outcomes_match(episodes: pd.DataFrame, attrs: list[str], strategy: str) -> None:
    outcomes = ["repairs", "latency"]
    ref = DivergenceExplorer(episodes).get_pattern_divergence(
        min_support=SUPPORT, quantitative_outcomes=outcomes, attributes=attrs
    )
    ours = mine(episodes, [*outcomes, "escalated"], attrs, min_support=SUPPORT, strategy=strategy)
    assert ours.strategy == strategy
    index = _index(ours)
    assert set(index) == set(ref["itemset"])
    rows = np.array([index[fs] for fs in ref["itemset"]])
    np.testing.assert_array_equal(ours.lattice.count[rows], ref["support_count"].to_numpy())
    np.testing.assert_allclose(ours.lattice.support[rows], ref["support"].to_numpy(), rtol=0, atol=1e-12)
    for outcome in outcomes:
        np.testing.assert_allclose(ours.mean(outcome)[rows], ref[outcome].to_numpy(), rtol=0, atol=1e-9)
        np.testing.assert_allclose(
            ours.divergence(outcome)[rows], ref[f"{outcome}_div"].to_numpy(), rtol=0, atol=1e-9
        )
        np.testing.assert_allclose(
            ours.effect(outcome).t[rows], ref[f"{outcome}_t"].to_numpy(), rtol=1e-9, atol=1e-9
        )


@pytest.mark.parametrize("strategy", ["topdown", "bottomup"])
def test_boolean_outcome_with_missing_values_matches(
    episodes: pd.DataFrame, attrs: list[str], strategy: str
) -> None:
    ref = DivergenceExplorer(episodes).get_pattern_divergence(
        min_support=SUPPORT, boolean_outcomes=["escalated"], attributes=attrs
    )
    ours = mine(episodes, ["repairs", "escalated"], attrs, min_support=SUPPORT, strategy=strategy)
    assert ours.boolean == (False, True)
    index = _index(ours)
    assert set(index) == set(ref["itemset"])
    rows = np.array([index[fs] for fs in ref["itemset"]])
    np.testing.assert_allclose(ours.mean("escalated")[rows], ref["escalated"].to_numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        ours.divergence("escalated")[rows], ref["escalated_div"].to_numpy(), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        ours.effect("escalated", "beta").t[rows], ref["escalated_t"].to_numpy(), rtol=1e-9, atol=1e-12
    )
    tidy = ours.table(["escalated"]).set_index("itemset_id").loc[rows]
    np.testing.assert_allclose(
        tidy["t_beta"].to_numpy(), ref["escalated_t"].to_numpy(), rtol=1e-9, atol=1e-12
    )


def test_attribute_nan_belongs_to_no_item(episodes: pd.DataFrame, attrs: list[str]) -> None:
    ours = mine(episodes, ["repairs"], attrs, min_support=SUPPORT)
    rate_items = [fs for fs in ours.lattice.itemsets() if len(fs) == 1 and next(iter(fs)).startswith("rate=")]
    assert sorted(rate_items, key=sorted) == [frozenset({f"rate={v}"}) for v in ("high", "low", "medium")]
    total = sum(ours.lattice.count[ours.lattice.find(fs)] for fs in rate_items)
    assert total == episodes["rate"].notna().sum()
    assert ours.lattice.count[0] == len(episodes)


def test_higher_support_gives_the_same_subset(episodes: pd.DataFrame, attrs: list[str]) -> None:
    low = mine(episodes, ["repairs"], attrs, min_support=0.02)
    high = mine(episodes, ["repairs"], attrs, min_support=0.1)
    low_index = _index(low)
    for i, fs in enumerate(high.lattice.itemsets()):
        assert high.lattice.count[i] >= 0.1 * len(episodes)
        assert high.lattice.count[i] == low.lattice.count[low_index[fs]]
    assert len(high) < len(low)


def test_many_outcomes_in_one_pass_equal_separate_passes(episodes: pd.DataFrame, attrs: list[str]) -> None:
    together = mine(episodes, ["repairs", "latency", "escalated"], attrs, min_support=SUPPORT)
    alone = mine(episodes, ["latency"], attrs, min_support=SUPPORT)
    np.testing.assert_array_equal(together.lattice.codes, alone.lattice.codes)
    np.testing.assert_allclose(together.mean("latency"), alone.mean("latency"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(together.effect("latency").t, alone.effect("latency").t, rtol=1e-12)
