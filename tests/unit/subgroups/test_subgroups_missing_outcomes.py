"""Missing outcome values are skipped per outcome (DivExplorer would return NaN): hand-computed table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.subgroups import mine

DF = pd.DataFrame(
    {
        "g": ["a", "a", "a", "b", "b", "b"],
        "h": ["x", "y", "x", "y", "x", "y"],
        "o": [1.0, np.nan, 3.0, 4.0, 6.0, np.nan],
        "full": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    }
)


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return mine(DF, ["o", "full"], ["g", "h"], min_support=0.1).table(["o"]).set_index("itemset")


def test_whole_dataset_uses_present_values(rows: pd.DataFrame) -> None:
    whole = rows.loc[""]
    assert whole["support_count"] == 6 and whole["n"] == 4
    assert whole["mean"] == pytest.approx(3.5)
    assert whole["divergence"] == 0.0


def test_subgroup_mean_divergence_and_welch_t(rows: pd.DataFrame) -> None:
    # g=a: present values 1, 3 -> mean 2, population variance 1; dataset: mean 3.5, variance 3.25, n 4
    a = rows.loc["g=a"]
    assert (a["support_count"], a["n"]) == (3, 2)
    assert a["mean"] == pytest.approx(2.0)
    assert a["divergence"] == pytest.approx(-1.5)
    assert a["t"] == pytest.approx(1.5 / math.sqrt(1 / 2 + 3.25 / 4))
    # h=y: a single present value (4): variance 0
    y = rows.loc["h=y"]
    assert (y["support_count"], y["n"]) == (3, 1)
    assert y["t"] == pytest.approx(0.5 / math.sqrt(3.25 / 4))
    assert np.isnan(y["p_value"])  # Welch df undefined with one value


def test_subgroup_with_no_present_value_is_nan_not_an_error(rows: pd.DataFrame) -> None:
    ay = rows.loc["g=a, h=y"]
    assert ay["support_count"] == 1 and ay["n"] == 0
    assert np.isnan(ay["mean"]) and np.isnan(ay["divergence"]) and np.isnan(ay["t"])


def test_other_outcome_is_unaffected() -> None:
    full = mine(DF, ["o", "full"], ["g", "h"], min_support=0.1).table(["full"]).set_index("itemset")
    assert full.loc["g=a", "n"] == 3
    assert full.loc["g=a", "mean"] == pytest.approx(2.0)
    assert full.loc["g=b, h=y", "mean"] == pytest.approx(5.0)
