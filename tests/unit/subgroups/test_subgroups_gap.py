"""Cross-agent gap on matched callers: means, Welch and paired tests against scipy, Shapley, pruning."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from voice_audit.analysis.subgroups import (
    GapInputError,
    cross_agent_gap,
    rank_subgroups,
    redundant,
    shapley_values,
)


def _agents(n: int = 300, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    callers = pd.DataFrame(
        {
            "caller": [f"c{i:03d}" for i in range(n)],
            "accent": rng.choice(["gb", "in", "ng"], n),
            "affect": rng.choice(["calm", "anxious"], n),
        }
    )
    base = rng.normal(2.0, 1.0, n)
    m1 = callers.assign(repairs=base + rng.normal(0, 0.3, n))
    worse = 1.0 * ((callers["accent"] == "ng") & (callers["affect"] == "anxious")).to_numpy()
    m2 = callers.assign(repairs=base + 0.2 + worse + rng.normal(0, 0.3, n))
    m2.loc[5, "repairs"] = np.nan  # one missing measurement for agent M2
    extra = pd.DataFrame({"caller": ["zz1"], "accent": ["gb"], "affect": ["calm"], "repairs": [9.0]})
    return m1, pd.concat([m2.sample(frac=1.0, random_state=0), extra], ignore_index=True)


@pytest.fixture(scope="module")
def agents() -> tuple[pd.DataFrame, pd.DataFrame]:
    return _agents()


def test_gap_tests_match_scipy_on_a_subgroup(agents: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    m1, m2 = agents
    gap = cross_agent_gap(
        m1, m2, key="caller", outcomes=["repairs"], attributes=["accent", "affect"], min_support=0.05
    )
    assert (gap.n_matched, gap.n_only_m1, gap.n_only_m2) == (300, 0, 1)
    table = gap.table().set_index("itemset")
    row = table.loc["accent=ng, affect=anxious"]
    joined = m1.merge(m2, on=["caller", "accent", "affect"], suffixes=("_1", "_2"))
    sub = joined[(joined["accent"] == "ng") & (joined["affect"] == "anxious")]
    x1, x2 = sub["repairs_1"].dropna(), sub["repairs_2"].dropna()
    assert row["gap"] == pytest.approx(x2.mean() - x1.mean(), abs=1e-12)
    welch = stats.ttest_ind(x2, x1, equal_var=False)
    assert row["t_welch"] == pytest.approx(welch.statistic, rel=1e-9)
    assert row["p_welch"] == pytest.approx(welch.pvalue, rel=1e-7)
    both = sub.dropna(subset=["repairs_1", "repairs_2"])
    paired = stats.ttest_rel(both["repairs_2"], both["repairs_1"])
    assert row["n_pairs"] == len(both)
    assert row["t_paired"] == pytest.approx(paired.statistic, rel=1e-9)
    assert row["p_paired"] == pytest.approx(paired.pvalue, rel=1e-7)
    whole = table.loc[""]
    assert row["gap_vs_all"] == pytest.approx(row["gap"] - whole["gap"], abs=1e-12)


def test_gap_shapley_sums_to_gap_beyond_the_overall_gap(agents: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    m1, m2 = agents
    gap = cross_agent_gap(
        m1, m2, key="caller", outcomes=["repairs"], attributes=["accent", "affect"], min_support=0.05
    )
    values = shapley_values(gap, {"accent": "ng", "affect": "anxious"}, "repairs")
    g = gap.gap("repairs")
    row = gap.lattice.find("accent=ng, affect=anxious")
    assert values.sum() == pytest.approx(g[row] - g[0], abs=1e-12)
    # by hand for two items: phi(a) = (v(a) - v()) / 2 + (v(ab) - v(b)) / 2 with v = gap - gap(D)
    va, vb = g[gap.lattice.find("accent=ng")] - g[0], g[gap.lattice.find("affect=anxious")] - g[0]
    assert values["accent=ng"] == pytest.approx(va / 2 + (g[row] - g[0] - vb) / 2, abs=1e-12)


def test_gap_ranking_and_pruning(agents: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    m1, m2 = agents
    gap = cross_agent_gap(
        m1, m2, key="caller", outcomes=["repairs"], attributes=["accent", "affect"], min_support=0.05
    )
    rank = rank_subgroups(gap, "repairs", direction="positive", epsilon=0.05)
    assert rank.table.iloc[0]["itemset"] == "accent=ng, affect=anxious"
    assert rank.n_tested == len(gap) - int(redundant(gap, "repairs", 0.05).sum())
    assert bool(rank.table.iloc[0]["significant"])


def test_gap_input_errors(agents: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    m1, m2 = agents
    kwargs = {"key": "caller", "outcomes": ["repairs"], "attributes": ["accent"]}
    with pytest.raises(GapInputError, match="key"):
        cross_agent_gap(pd.concat([m1, m1.iloc[:1]]), m2, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(GapInputError, match="accent"):
        cross_agent_gap(m1, m2.assign(accent="gb"), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(GapInputError, match="key"):
        cross_agent_gap(m1, m2.assign(caller="other"), **kwargs)  # type: ignore[arg-type]
