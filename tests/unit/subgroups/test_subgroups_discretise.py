"""Frequency binning: partition, ties, few distinct values, missing values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.subgroups import AttributeInputError, bin_codes, discretise


def test_equal_frequency_on_distinct_values() -> None:
    df = pd.DataFrame({"rate": np.arange(9.0)[::-1]})
    out = discretise(df, ["rate"])
    assert list(out["rate"].cat.categories) == ["low", "medium", "high"]
    assert out["rate"].value_counts().to_dict() == {"low": 3, "medium": 3, "high": 3}
    assert list(out["rate"][:3]) == ["high"] * 3  # values 8, 7, 6


def test_bins_are_value_intervals_and_ties_share_a_bin() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 7, 500).astype(float)
    codes = bin_codes(x, 3)
    assert set(codes) <= {0, 1, 2}
    for v in np.unique(x):
        assert len(set(codes[x == v])) == 1
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(codes[order]) >= 0)


def test_ties_follow_mid_rank() -> None:
    # n=10; value 1 holds ranks [0, 6), mid-rank 3 -> floor(3*3/10) = 0; value 2 holds [6, 8), mid 7 -> 2;
    # value 3 mid 8.5 -> 2; value 4 mid 9.5 -> 2 (the tie block leaves "medium" empty, by design)
    x = np.array([1, 1, 1, 1, 1, 1, 2, 2, 3, 4], dtype=float)
    assert bin_codes(x, 3).tolist() == [0] * 6 + [2] * 4
    # no ties: plain equal-frequency thirds of 6 values
    assert bin_codes(np.array([6.0, 5, 4, 3, 2, 1]), 3).tolist() == [2, 2, 1, 1, 0, 0]


def test_row_order_does_not_change_bins() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=200).round(1)
    perm = rng.permutation(200)
    assert np.array_equal(bin_codes(x, 3)[perm], bin_codes(x[perm], 3))


@pytest.mark.parametrize(
    ("values", "expected"), [([5.0] * 4, ["medium"] * 4), ([1.0, 2.0, 1.0], ["low", "high", "low"])]
)
def test_fewer_distinct_values_than_bins(values: list[float], expected: list[str]) -> None:
    out = discretise(pd.DataFrame({"x": values}), ["x"])
    assert list(out["x"]) == expected


def test_missing_is_excluded_by_default_or_labelled() -> None:
    df = pd.DataFrame({"x": [1.0, np.nan, 2.0, 3.0], "y": ["a", "b", "c", "d"]})
    out = discretise(df, ["x"])
    assert out["x"].isna().tolist() == [False, True, False, False]
    assert list(out["y"]) == ["a", "b", "c", "d"]
    labelled = discretise(df, ["x"], missing="missing")
    assert labelled["x"].tolist() == ["low", "missing", "medium", "high"]
    assert df["x"].isna().sum() == 1  # input untouched


def test_bad_inputs_name_the_parameter() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]})
    with pytest.raises(AttributeInputError, match="columns"):
        discretise(df, ["nope"])
    with pytest.raises(AttributeInputError, match="columns"):
        discretise(df, ["s"])
    with pytest.raises(AttributeInputError, match="bins"):
        discretise(df, ["x"], bins=("only",))
