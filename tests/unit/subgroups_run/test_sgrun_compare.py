"""CI narrowing on a synthetic before/after, intervals against their formulas, bins carried over."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from voice_audit.analysis.subgroups_run import (
    compare_tables,
    discretise_attributes,
    divergence_interval,
    mean_interval,
)

from ._tables import PLANTED, episode_table


def test_intervals_match_their_formulas() -> None:
    x = np.array([1.0, 2.0, 4.0, np.nan, 7.0])
    est, lo, hi = mean_interval(x, binary=False)
    half = sps.t.ppf(0.975, 3) * np.std([1, 2, 4, 7], ddof=1) / 2
    assert math.isclose(est, 3.5) and math.isclose(hi - lo, 2 * half)
    est, lo, hi = mean_interval(np.array([1.0] * 8 + [0.0] * 2), binary=True)
    z, n, p = sps.norm.ppf(0.975), 10, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    assert math.isclose((lo + hi) / 2, centre) and 0 < lo < p < hi < 1
    assert (
        mean_interval(np.ones(6), binary=True)[2] - mean_interval(np.ones(6), binary=True)[1] > 0
    )  # Wilson: never 0
    sub, whole = np.array([0.0, 1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    div, width = divergence_interval(sub, whole)
    assert math.isclose(div, 0.25 - 0.625)
    assert math.isclose(width, 2 * sps.norm.ppf(0.975) * math.sqrt(sub.var() / 4 + whole.var() / 8))


def test_ci_narrowing_on_a_synthetic_follow_up(tmp_path: Path) -> None:
    before = episode_table(tmp_path, n=300, seed=0)
    after = episode_table(tmp_path, n=900, seed=5)
    after = replace(after, run_id="fu")
    rows = compare_tables(before, after, [PLANTED], ["outcome_acceptable"])
    assert len(rows) == 1
    row = rows[0]
    mask_b = np.ones(len(before.raw), dtype=bool)
    mask_a = np.ones(len(after.raw), dtype=bool)
    for k, v in PLANTED.items():
        mask_b &= (before.raw[k] == v).to_numpy()
        mask_a &= (after.raw[k] == v).to_numpy()
    vb = before.outcomes["outcome_acceptable"].to_numpy()[mask_b]
    pooled = np.concatenate([vb, after.outcomes["outcome_acceptable"].to_numpy()[mask_a]])
    _, lo_b, hi_b = mean_interval(vb, binary=True)
    _, lo_a, hi_a = mean_interval(pooled, binary=True)
    assert row["before"]["n"] == int((~np.isnan(vb)).sum())
    assert row["after"]["episodes"] == mask_b.sum() + mask_a.sum() and row["added_episodes"] == mask_a.sum()
    assert math.isclose(row["before"]["ci_width"], hi_b - lo_b) and math.isclose(
        row["after"]["ci_width"], hi_a - lo_a
    )
    assert math.isclose(row["ci_narrowing"], 1 - (hi_a - lo_a) / (hi_b - lo_b))
    assert 0.3 < row["ci_narrowing"] < 0.7  # about 1 - 1/sqrt(4) with four times the data
    assert row["divergence_ci_narrowing"] > 0


def test_follow_up_is_binned_on_the_original_cut_points(tmp_path: Path) -> None:
    raw = episode_table(tmp_path, n=300).raw
    binned, edges = discretise_attributes(raw)
    again, _ = discretise_attributes(raw, edges=edges)
    for col in ("speaking_rate", "snr"):
        assert (binned[col].astype(str) == again[col].astype(str)).all()
    shifted = raw.assign(speaking_rate=raw["speaking_rate"] + 100.0)
    moved, _ = discretise_attributes(shifted, edges=edges)
    assert (moved["speaking_rate"].astype(str) == "high").all()
    assert pd.isna(discretise_attributes(raw.assign(snr=np.nan), edges=edges)[0]["snr"]).all()
