"""Subgroups are described by pre-treatment attributes: a planted burden on one accent is found as the
accent (or its stimulus correlate), never as the realised-call measures the extra repairs produced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from voice_audit.analysis.subgroups_run import MiningOptions, mine_run
from voice_audit.analysis.subgroups_run.agent_gaps import GAP_ATTRIBUTES, gaps_within
from voice_audit.analysis.subgroups_run.attributes import REALISED, STIMULUS, discretise_attributes
from voice_audit.analysis.subgroups_run.run_mining import EpisodeTable
from voice_audit.analysis.subgroups_run.signals import REALISED_REASON, caller_stimulus

from ._tables import raw_table


def _burden_table(tmp: Path, n: int = 600) -> EpisodeTable:
    """Spanish-L1 callers get ~2 more repair requests; every repair adds caller words and silence to the
    realised call (a consequence), while the opening anchor's speaking rate is a property of the voice."""
    rng = np.random.default_rng(7)
    raw = raw_table(n, seed=3)
    i = np.arange(n)
    raw["agent"] = np.where(i % 4 < 2, "a1", "a2")
    first = i - 2 * (i % 4 >= 2)  # the same caller's call with agent a1
    raw["caller_id"] = [f"c{k // 4}{'ab'[k % 2]}" for k in i]
    for col in ("accent", "voice_profile", "gender", "age_band", "affect"):
        raw[col] = raw[col].to_numpy()[first]
    spanish = (raw["accent"] == "l2_spanish").to_numpy()
    raw["speaking_rate"] = np.where(spanish, 2.1, 2.6) + rng.normal(0, 0.15, n)
    for col in STIMULUS:  # one stimulus per caller, whichever agent it met
        raw[col] = raw[col].to_numpy()[first]
    repairs = rng.poisson(np.where(spanish, 2.5, 0.5)).astype(float)
    raw["call_word_count"] = 60 + 14 * repairs + rng.normal(0, 3, n)
    raw["call_trimmed_silence"] = 4 + 1.5 * repairs + rng.normal(0, 0.3, n)
    raw["call_caller_duration"] = 20 + 5 * repairs + rng.normal(0, 1, n)
    raw["call_speaking_rate"] = 2.5 - 0.1 * repairs + rng.normal(0, 0.05, n)
    ok = (raw["status"] == "completed").to_numpy()
    outcomes = pd.DataFrame(
        {
            "burden_repair": np.where(ok, repairs, np.nan),
            "call_failed": (~ok).astype(float),
        },
        index=raw.index,
    )
    binned, edges = discretise_attributes(raw)
    return EpisodeTable(
        run_dir=tmp,
        run_id="unit",
        raw=raw,
        binned=binned,
        edges=edges,
        outcomes=outcomes,
        metrics=tuple(outcomes.columns),
        dropped_metrics={},
        agents=("a1", "a2"),
    )


def _top_items(mining: object, metric: str, k: int) -> list[set[str]]:
    table = mining.rankings[metric].table  # type: ignore[attr-defined]
    harmful = table[table["estimate"] > 0].head(k)
    return [{item.split("=")[0] for item in s.split(", ")} for s in harmful["itemset"]]


def test_planted_accent_burden_is_named_by_accent_never_by_realised_call(tmp_path: Path) -> None:
    tab = _burden_table(tmp_path)
    res = mine_run(tmp_path, MiningOptions(), tab)
    for name in REALISED:
        assert res.dropped_attributes[name] == REALISED_REASON
    top = _top_items(res, "burden_repair", 5)
    assert top, "the planted burden must be found"
    pre = {"accent", "speaking_rate"}
    for attrs in top:
        assert attrs & pre, attrs
        assert not attrs & set(REALISED), attrs
    first = res.rankings["burden_repair"].table.iloc[0]
    assert "accent=l2_spanish" in first["itemset"] or "speaking_rate=low" in first["itemset"]


def test_realised_attributes_would_capture_the_ranking_when_let_in(tmp_path: Path) -> None:
    """The guard matters: mined for diagnostics, the realised call's own length outranks the accent."""
    tab = _burden_table(tmp_path)
    res = mine_run(tmp_path, MiningOptions(realised=True), tab)
    top = _top_items(res, "burden_repair", 3)
    assert any(attrs & set(REALISED) for attrs in top)


def test_gap_uses_stimulus_but_never_realised_attributes(tmp_path: Path) -> None:
    assert set(STIMULUS) <= set(GAP_ATTRIBUTES) and not set(REALISED) & set(GAP_ATTRIBUTES)
    tab = _burden_table(tmp_path)
    (gap,) = gaps_within(tab, MiningOptions(realised=True))
    assert not set(gap.attributes) & set(REALISED)


def test_stimulus_is_pooled_per_caller() -> None:
    measures = pd.DataFrame(
        {c: [1.0, 1.02, 5.0, np.nan] for c in STIMULUS},
        index=pd.Index(["e1", "e2", "e3", "e4"], name="episode_id"),
    )
    callers = pd.Series(["c1", "c1", "c2", "c2"], index=measures.index)
    pooled = caller_stimulus(measures, callers)
    assert pooled.loc["e1", "speaking_rate"] == pooled.loc["e2", "speaking_rate"] == 1.01
    assert pooled.loc["e4", "snr"] == 5.0  # a caller's unmeasured call takes the caller's stimulus
