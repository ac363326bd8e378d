"""Intervals cluster by the speaker an episode records, not by the realisation: two realisations of
one person (Flite's kal and kal16, one man at two sample rates) are one unit of evidence, a person
who voices both conditions of a wording cell is one unit, and a record without a speaker (before
schema version 4) falls back to its realisation."""

from __future__ import annotations

import numpy as np
import pandas as pd

from voice_audit.analysis.deltas import distinct_voices
from voice_audit.analysis.metrics._episodes import voice_id
from voice_audit.analysis.stats import paired_mean_delta, voice_clusters


def long_frame(
    speakers_a: list[str | None], speakers_b: list[str | None], values: list[float]
) -> pd.DataFrame:
    """One pair per entry: realisation i of condition a (speaker speakers_a[i]) against realisation i
    of condition b, metric a - b = values[i]."""
    rows = []
    for i, (sa, sb, d) in enumerate(zip(speakers_a, speakers_b, values, strict=True)):
        for side, spk, key, m in (("a", sa, "accent=us", d), ("b", sb, "accent=gb", 0.0)):
            rows.append(
                {
                    "pair_id": f"p{i:02d}",
                    "side": side,
                    "scenario_id": "s",
                    "voice_id": voice_id(key, i % 2, spk),
                    "run_batch": "b",
                    "agent": "x",
                    "m": m,
                }
            )
    return pd.DataFrame(rows)


def test_two_realisations_of_one_speaker_are_one_cluster() -> None:
    # realisations 0 and 1 of condition a are kal and kal16 (both cmu-kal); b is awb in both
    speakers_a: list[str | None] = ["cmu-kal", "cmu-kal"] * 4
    speakers_b: list[str | None] = ["cmu-awb", "cmu-awb"] * 4
    long = long_frame(speakers_a, speakers_b, [0.1, 0.9, 0.2, 0.8, 0.15, 0.85, 0.1, 0.9])
    assert distinct_voices(long) == 1
    est = paired_mean_delta(long, "m", interval="signflip", cluster_by_voice=True)
    assert est.n_clusters == 1
    # the same calls from records that name no speaker: two realisations, two clusters
    old = long_frame([None] * 8, [None] * 8, [0.1, 0.9, 0.2, 0.8, 0.15, 0.85, 0.1, 0.9])
    assert distinct_voices(old) == 2
    assert paired_mean_delta(old, "m", interval="signflip", cluster_by_voice=True).n_clusters == 2


def test_a_speaker_in_both_conditions_is_one_cluster_and_three_speakers_are_three() -> None:
    people = ["cmu-slt", "cmu-kal", "cmu-rms"]
    speakers: list[str | None] = [people[i % 3] for i in range(12)]
    rng = np.random.default_rng(1)
    long = long_frame(speakers, speakers, list(rng.normal(0.0, 1.0, 12)))
    assert distinct_voices(long) == 3
    assert paired_mean_delta(long, "m", interval="signflip", cluster_by_voice=True).n_clusters == 3


def test_a_person_on_side_a_of_one_pair_and_side_b_of_another_links_them() -> None:
    labels = voice_clusters(["cmu-kal", "cmu-rms", "cmu-slt"], ["cmu-rms", "cmu-kal", "cmu-awb"])
    assert labels[0] == labels[1] != labels[2]
