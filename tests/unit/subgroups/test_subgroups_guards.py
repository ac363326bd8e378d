"""Guards and awkward inputs: clear one-line errors naming the parameter, or sensible handling."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.subgroups import (
    AttributeInputError,
    CubeTooLargeError,
    OutcomeError,
    SubgroupError,
    SubgroupWarning,
    TooManyItemsetsError,
    TooManyLevelsError,
    min_count_for,
    mine,
)


def _table(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f"a{i}": rng.choice(["x", "y", "z"], n) for i in range(5)}).assign(
        o=rng.normal(size=n)
    )


def test_errors_are_value_errors_with_one_line_naming_the_parameter() -> None:
    with pytest.raises(TooManyItemsetsError) as info:
        mine(_table(), ["o"], min_support=0.01, max_itemsets=50)
    assert isinstance(info.value, ValueError)
    assert (
        "\n" not in str(info.value) and "max_itemsets" in str(info.value) and "min_support" in str(info.value)
    )
    with pytest.raises(SubgroupError, match="min_support"):
        mine(_table(), ["o"], min_support=0.0)


def test_max_length_caps_itemsets_in_both_strategies() -> None:
    df = _table()
    full = mine(df, ["o"], min_support=0.01)
    for strategy in ("topdown", "bottomup"):
        capped = mine(df, ["o"], min_support=0.01, max_length=2, strategy=strategy)  # type: ignore[arg-type]
        assert capped.lattice.length.max() == 2
        assert len(capped) == int((full.lattice.length <= 2).sum())


def test_constant_attribute_is_dropped_with_a_warning_or_kept() -> None:
    df = _table().assign(channel="phone")
    with pytest.warns(SubgroupWarning, match="channel"):
        dropped = mine(df, ["o"], min_support=0.05)
    assert "channel" not in dropped.lattice.attributes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = mine(df, ["o"], min_support=0.05, constant_attributes="keep")
    assert len(kept) == 2 * len(dropped)  # every itemset appears with and without channel=phone


def test_all_missing_or_non_numeric_outcome_is_rejected() -> None:
    df = _table().assign(empty=np.nan, text="a")
    with pytest.raises(OutcomeError, match=r"empty.*outcomes"):
        mine(df, ["o", "empty"], [f"a{i}" for i in range(5)])
    with pytest.raises(OutcomeError, match="text"):
        mine(df, ["text"], [f"a{i}" for i in range(5)])
    with pytest.raises(AttributeInputError, match="attributes"):
        mine(df, ["o"], ["nope"])


def test_attribute_with_hundreds_of_values_uses_bottom_up_and_agrees() -> None:
    rng = np.random.default_rng(2)
    n = 20_000
    df = pd.DataFrame({f"a{i}": rng.integers(0, 4, n) for i in range(9)})
    df["postcode"] = rng.integers(0, 400, n)
    df["o"] = rng.normal(size=n)
    auto = mine(df, ["o"], min_support=0.002)
    assert auto.strategy == "bottomup"
    with pytest.raises(CubeTooLargeError, match="strategy"):
        mine(df, ["o"], min_support=0.002, strategy="topdown")
    small = mine(df.drop(columns=["postcode"]), ["o"], min_support=0.002, strategy="topdown")
    no_postcode = auto.lattice.codes[:, auto.lattice.attributes.index("postcode")] < 0
    assert int(no_postcode.sum()) == len(small)
    frequent_postcodes = int((df["postcode"].value_counts() >= 40).sum())
    assert 100 < frequent_postcodes == int((auto.lattice.codes[:, -1] >= 0).sum())
    with pytest.raises(TooManyLevelsError, match="max_levels"):
        mine(df, ["o"], min_support=0.002, max_levels=100)


def test_min_count_is_the_smallest_count_reaching_the_support() -> None:
    assert min_count_for(0.07, 100) == 7  # 0.07 * 100 = 7.000000000000001 in floating point
    assert min_count_for(0.001, 1_000_000) == 1000
    assert min_count_for(0.0125, 1000) == 13


def test_many_attributes_beyond_int64_cell_keys_match_divexplorer() -> None:
    from divexplorer import DivergenceExplorer

    rng = np.random.default_rng(4)
    n = 300
    df = pd.DataFrame({f"a{i:02d}": rng.integers(0, 6, n) for i in range(25)})  # 6**25 cells > 2**62
    df["a01"] = df["a00"]
    df["o"] = rng.normal(size=n) + (df["a00"] == 2)
    ours = mine(df, ["o"], min_support=0.1)
    assert ours.strategy == "bottomup"
    ref = DivergenceExplorer(df).get_pattern_divergence(min_support=0.1, quantitative_outcomes=["o"])
    index = {fs: i for i, fs in enumerate(ours.lattice.itemsets())}
    assert set(index) == set(ref["itemset"])
    assert int((ours.lattice.length == 2).sum()) >= 6  # the duplicated attribute pairs at least
    rows = np.array([index[fs] for fs in ref["itemset"]])
    np.testing.assert_allclose(ours.divergence("o")[rows], ref["o_div"].to_numpy(), atol=1e-12)
    assert ours.lattice.find({"a00": "2", "a01": "2"}) > 0  # lookup without int64 keys
