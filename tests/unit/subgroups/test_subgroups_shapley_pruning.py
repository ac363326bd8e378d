"""Shapley values, global item divergence and redundancy pruning agree with DivExplorer; ranking and BH."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from divexplorer import DivergenceExplorer, DivergencePatternProcessor
from statsmodels.stats.multitest import multipletests

from voice_audit.analysis.subgroups import (
    SubgroupError,
    Subgroups,
    UnknownItemsetError,
    global_item_divergence,
    mine,
    rank_subgroups,
    redundant,
    shapley_values,
)

SUPPORT = 0.03


@pytest.fixture(scope="module")
def pair(episodes: pd.DataFrame, attrs: list[str]) -> tuple[Subgroups, DivergencePatternProcessor]:
    ref = DivergenceExplorer(episodes).get_pattern_divergence(
        min_support=SUPPORT, quantitative_outcomes=["latency"], attributes=attrs
    )
    return mine(episodes, ["latency", "escalated"], attrs, min_support=SUPPORT), DivergencePatternProcessor(
        ref, "latency"
    )


def test_shapley_matches_divexplorer_and_sums_to_divergence(
    pair: tuple[Subgroups, DivergencePatternProcessor],
) -> None:
    ours, ref = pair
    div = ours.divergence("latency")
    checked = 0
    for fs in ref.patterns["itemset"]:
        if len(fs) < 2:
            continue
        expected = {next(iter(k)): v for k, v in ref.shapley_value(pattern=fs).items()}
        got = shapley_values(ours, fs, "latency")
        assert set(got.index) == set(expected)
        for item, value in expected.items():
            assert got[item] == pytest.approx(value, abs=1e-12)
        assert got.sum() == pytest.approx(div[ours.lattice.find(fs)], abs=1e-12)
        checked += 1
    assert checked > 20


def test_shapley_accepts_labels_and_mappings(pair: tuple[Subgroups, DivergencePatternProcessor]) -> None:
    ours, _ = pair
    by_label = shapley_values(ours, "accent=ng, gender=m", "latency")
    by_map = shapley_values(ours, {"gender": "m", "accent": "ng"}, "latency")
    pd.testing.assert_series_equal(by_label, by_map)
    with pytest.raises(UnknownItemsetError, match="unknown value"):
        shapley_values(ours, {"accent": "fr"}, "latency")


def test_global_item_divergence_matches_divexplorer(
    pair: tuple[Subgroups, DivergencePatternProcessor],
) -> None:
    ours, ref = pair
    expected = {next(iter(k)): v for k, v in ref.global_shapley_value().items()}
    got = global_item_divergence(ours, "latency")
    assert set(got.index) == set(expected)
    for item, value in expected.items():
        assert got[item] == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("epsilon", [0.0, 0.02, 0.1])
def test_pruned_sets_match_divexplorer(
    pair: tuple[Subgroups, DivergencePatternProcessor], epsilon: float
) -> None:
    ours, ref = pair
    kept = {ours.lattice.itemset(i) for i in np.nonzero(~redundant(ours, "latency", epsilon))[0]}
    assert kept == set(ref.redundancy_pruning(epsilon)["itemset"])


def test_pruning_keeps_the_general_itemset_by_hand() -> None:
    # a=1 has divergence +1; adding b=1 changes it by 0 -> {a=1, b=1} is redundant, a=1 is kept
    df = pd.DataFrame({"a": [1, 1, 0, 0], "b": [1, 0, 1, 0], "o": [2.0, 2.0, 0.0, 0.0]})
    result = mine(df, ["o"], ["a", "b"], min_support=0.25)
    red = redundant(result, "o", 1e-9)
    flagged = {", ".join(sorted(result.lattice.itemset(i))) for i in np.nonzero(red)[0]}
    assert "a=1, b=1" in flagged and "a=0, b=1" in flagged
    assert "a=1" not in flagged and "b=1" in flagged  # b alone has divergence 0 = the empty itemset's
    with pytest.raises(SubgroupError, match="epsilon"):
        redundant(result, "o", -1.0)


def test_ranking_applies_bh_over_the_tested_itemsets(
    pair: tuple[Subgroups, DivergencePatternProcessor],
) -> None:
    ours, _ = pair
    rank = rank_subgroups(ours, "latency", epsilon=0.02, direction="both")
    kept = ~redundant(ours, "latency", 0.02)
    kept[0] = False
    assert rank.n_tested == kept.sum() == len(rank.table)
    assert rank.n_pruned == len(ours) - 1 - kept.sum()
    expected_q = multipletests(rank.table["p_value"].to_numpy(), method="fdr_bh")[1]
    np.testing.assert_allclose(rank.table["q_value"].to_numpy(), expected_q, rtol=1e-12)
    assert rank.n_significant == int((expected_q <= 0.05).sum())
    assert np.all(np.diff(np.abs(rank.table["t"].to_numpy())) <= 0)
    # the planted effect (accent=ng raises latency) is found
    assert rank.table.iloc[0]["estimate"] > 0


def test_negative_direction_and_lower_bound(pair: tuple[Subgroups, DivergencePatternProcessor]) -> None:
    ours, _ = pair
    rank = rank_subgroups(ours, "latency", by="lcb", direction="negative", top=5, confidence=0.9)
    table = rank.table
    assert len(table) == 5
    np.testing.assert_allclose(
        table["bound"], table["estimate"] + 1.2815515655446004 * table["se"], rtol=1e-12
    )
    assert np.all(np.diff(table["bound"].to_numpy()) >= 0)  # most confidently negative first
    assert rank.n_tested > 5  # BH ran over all tested itemsets, not only the top 5


def test_boolean_ranking_uses_the_beta_test_by_default(
    pair: tuple[Subgroups, DivergencePatternProcessor],
) -> None:
    ours, _ = pair
    auto = rank_subgroups(ours, "escalated", direction="both")
    beta = ours.effect("escalated", "beta")
    row = int(auto.table.iloc[0]["itemset_id"])
    assert abs(auto.table.iloc[0]["t"]) == pytest.approx(beta.t[row])
