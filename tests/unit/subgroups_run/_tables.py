"""Hand-built episode tables with a planted subgroup, for unit tests that need no run folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from voice_audit.analysis.subgroups_run.attributes import KEYS, SIGNALS, discretise_attributes
from voice_audit.analysis.subgroups_run.run_mining import EpisodeTable

PLANTED = {"accent": "l2_spanish", "affect": "frustrated"}


def raw_table(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    profile = rng.choice(["female_adult", "male_older"], n)
    df = pd.DataFrame(
        {
            "episode_id": [f"e{i}" for i in range(n)],
            "run_id": "unit",
            "pair_id": [f"p{i // 2}" for i in range(n)],
            "caller_id": [f"c{i}" for i in range(n)],
            "side": np.where(np.arange(n) % 2 == 0, "a", "b"),
            "contrast": "accent",
            "replicate": 0,
            "voice_index": 0,
            "status": np.where(rng.random(n) < 0.03, "failed", "completed"),
            "events_sha256": "x",
            "accent": rng.choice(["us_general", "l2_spanish", "caribbean"], n),
            "voice_profile": profile,
            "gender": np.where(profile == "female_adult", "female", "male"),
            "age_band": np.where(profile == "female_adult", "adult", "older"),
            "affect": rng.choice(["calm", "frustrated"], n),
            "disfluency": "none",
            "wording": "plain",
            "scenario": "refund_duplicate_charge",
            "agent": "a1",
            "channel": "telephone",
        }
    )
    for col in SIGNALS:
        df[col] = rng.normal(size=n)
    df["opening_words"] = np.nan  # all missing: must be dropped, not fail
    return df.set_index("episode_id", drop=False)[[*KEYS, *[c for c in df.columns if c not in KEYS]]]


def outcomes_for(raw: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    planted = np.ones(len(raw), dtype=bool)
    for attr, value in PLANTED.items():
        planted &= (raw[attr] == value).to_numpy()
    p = np.where(planted, 0.2, 0.9)
    ok = (raw["status"] == "completed").to_numpy()
    acceptable = np.where(ok, (rng.random(len(raw)) < p).astype(float), np.nan)
    auth = np.where(ok, rng.poisson(np.where(planted, 4.0, 1.0)).astype(float), np.nan)
    return pd.DataFrame(
        {"outcome_acceptable": acceptable, "burden_auth": auth, "call_failed": (~ok).astype(float)},
        index=raw.index,
    )


def episode_table(tmp: Path, n: int = 600, seed: int = 0) -> EpisodeTable:
    raw = raw_table(n, seed)
    binned, edges = discretise_attributes(raw)
    out = outcomes_for(raw, seed + 1)
    return EpisodeTable(
        run_dir=tmp,
        run_id="unit",
        raw=raw,
        binned=binned,
        edges=edges,
        outcomes=out,
        metrics=tuple(out.columns),
        dropped_metrics={},
    )
