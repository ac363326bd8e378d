"""Run-level mining on hand-built tables: planted subgroup found with the right sign, outputs well formed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from voice_audit.analysis.subgroups import SubgroupError, TooManyItemsetsError, TooManyLevelsError
from voice_audit.analysis.subgroups_run import MiningOptions, mine_run, write_outputs
from voice_audit.analysis.subgroups_run.attributes import ALL_ATTRIBUTES
from voice_audit.analysis.subgroups_run.outcomes import outcome_table
from voice_audit.analysis.subgroups_run.run_mining import select_attributes

from ._tables import PLANTED, episode_table


def _strict(text: str) -> object:
    def bad(c: str) -> float:
        raise AssertionError(f"non-JSON constant {c}")

    return json.loads(text, parse_constant=bad)


def test_planted_subgroup_ranks_first_with_the_harmful_sign(tmp_path: Path) -> None:
    tab = episode_table(tmp_path)
    res = mine_run(tmp_path, MiningOptions(), tab)
    assert res.dropped_attributes["opening_words"] == "all missing"
    assert res.dropped_attributes["scenario"].startswith("single value")
    assert res.dropped_attributes["gender"] == "same split as voice_profile"  # aliases are mined once
    planted = {f"{k}={v}" for k, v in PLANTED.items()}
    for metric, sign in (("outcome_acceptable", -1), ("burden_auth", 1)):  # burden: higher is worse
        ranked = res.rankings[metric].table
        assert planted <= set(ranked.iloc[0]["itemset"].split(", "))  # noise may add an item, never drop one
        row = ranked[ranked["itemset"].map(lambda s: set(s.split(", ")) == planted)].iloc[0]
        assert sign * row["estimate"] > 0 and row["significant"] and row.name < res.options.top
    # failed calls count in support but not in the outcome means
    j = res.mined.column("outcome_acceptable")
    assert res.mined.lattice.count[0] == len(tab.raw)
    assert res.mined.n[0, j] == (tab.raw["status"] == "completed").sum()


def test_outputs_json_is_strict_and_shapley_sums_to_divergence(tmp_path: Path) -> None:
    res = mine_run(tmp_path, MiningOptions(top=5, plot_top=1), episode_table(tmp_path))
    written = write_outputs(res, plots=True)
    doc = _strict(written.json_path.read_text())
    assert isinstance(doc, dict) and doc["schema"] == "voice-audit/subgroups" and doc["schema_version"] == 1
    sec = next(m for m in doc["metrics"] if m["metric"] == "outcome_acceptable")
    assert sec["direction"] == "negative" and len(sec["top"]) == 5
    first = sec["top"][0]
    assert math.isclose(sum(first["shapley"].values()), first["divergence"], abs_tol=1e-9)
    assert first["shapley_plot"] and (tmp_path / first["shapley_plot"]).exists()
    assert sec["global_divergence_plot"] and (tmp_path / sec["global_divergence_plot"]).exists()
    assert sec["top"][1]["shapley_plot"] is None  # plot_top=1
    table = pd.read_parquet(written.parquet_path)
    assert {"itemset", "outcome", "divergence", "q_value", "redundant", "rank"} <= set(table.columns)
    assert set(table["outcome"]) == {"outcome_acceptable", "burden_auth", "call_failed"}


def test_attribute_guards(tmp_path: Path) -> None:
    tab = episode_table(tmp_path, n=200)
    binned = tab.binned.copy()
    binned["accent"] = [f"acc{i}" for i in range(len(binned))]
    with pytest.raises(TooManyLevelsError, match="--exclude accent"):
        select_attributes(binned, ALL_ATTRIBUTES, MiningOptions())
    kept, dropped = select_attributes(binned, ALL_ATTRIBUTES, MiningOptions(exclude=("accent",)))
    assert "accent" not in kept and dropped["accent"] == "excluded"
    with pytest.raises(SubgroupError, match="unknown attribute"):
        select_attributes(binned, ALL_ATTRIBUTES, MiningOptions(exclude=("nope",)))
    flat = binned.assign(**{a: "x" for a in ALL_ATTRIBUTES})
    with pytest.raises(SubgroupError, match="no attribute varies"):
        select_attributes(flat, ALL_ATTRIBUTES, MiningOptions())


def test_lattice_guard(tmp_path: Path) -> None:
    tab = episode_table(tmp_path, n=300)
    with pytest.raises(TooManyItemsetsError, match="max_itemsets"):
        mine_run(tmp_path, MiningOptions(min_count=1, max_length=None, max_itemsets=50), tab)


def test_all_missing_outcomes_are_dropped_and_failed_calls_blanked(tmp_path: Path) -> None:
    tab = episode_table(tmp_path, n=50)
    metrics = pd.DataFrame(
        {
            "episode_id": tab.raw["episode_id"].to_numpy(),
            "outcome_acceptable": 1.0,
            "burden_auth": float("nan"),
        }
    )
    out, kept, dropped = outcome_table(tab.raw, metrics)
    assert kept == ["outcome_acceptable", "call_failed"]
    assert dropped == {"burden_auth": "no value on any completed call"}
    failed = (tab.raw["status"] != "completed").to_numpy()
    assert out.loc[failed, "outcome_acceptable"].isna().all()
    assert (out.loc[failed, "call_failed"] == 1.0).all()
