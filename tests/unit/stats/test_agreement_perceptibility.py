"""Persona perceptibility: >= 5 raters, accuracy >= 80 %, above chance by an exact binomial test."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from voice_audit.analysis.agreement import perceptibility


def _ratings(
    axis: str, raters: int, per_rater: int, correct_per_rater: int, levels: list[str]
) -> pd.DataFrame:
    rows = []
    for r in range(raters):
        for j in range(per_rater):
            intended = levels[j % len(levels)]
            wrong = levels[(j + 1) % len(levels)]
            rows.append(
                {
                    "rater": f"r{r}",
                    "axis": axis,
                    "intended": intended,
                    "perceived": intended if j < correct_per_rater else wrong,
                }
            )
    return pd.DataFrame(rows)


def test_pass_fail_not_evaluable() -> None:
    frame = pd.concat(
        [
            _ratings("accent", 6, 10, 9, ["us", "in", "ng"]),
            _ratings("affect", 6, 10, 7, ["calm", "anxious"]),
            _ratings("fluency", 4, 10, 10, ["fluent", "disfluent"]),
        ]
    )
    out = perceptibility(frame)
    assert out["accent"].verdict == "pass" and out["accent"].accuracy == pytest.approx(0.9)
    assert out["accent"].chance == pytest.approx(1 / 3)
    assert out["accent"].p_value == pytest.approx(
        stats.binomtest(54, 60, 1 / 3, alternative="greater").pvalue
    )
    assert out["affect"].verdict == "fail" and "accuracy below threshold" in out["affect"].evidence
    assert out["fluency"].verdict == "not-evaluable" and "fewer than 5 raters" in out["fluency"].evidence


def test_declared_levels_set_chance_and_above_chance_is_required() -> None:
    frame = pd.DataFrame(
        {
            "rater": [f"r{i}" for i in range(5)],
            "axis": "accent",
            "intended": ["us"] * 5,
            "perceived": ["us", "us", "us", "us", "in"],
        }
    )
    out = perceptibility(frame, levels={"accent": ["us", "in"]})
    assert out["accent"].accuracy == 0.8 and out["accent"].chance == 0.5
    assert out["accent"].p_value == pytest.approx(6 / 32)
    assert out["accent"].verdict == "fail" and "not significantly above chance" in out["accent"].evidence


def test_missing_columns_raise() -> None:
    with pytest.raises(ValueError, match="lack column"):
        perceptibility(pd.DataFrame({"rater": [1]}))
