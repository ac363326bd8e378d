"""Cohen's kappa, Krippendorff's alpha and the annotation-reliability gate."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from voice_audit.analysis.agreement import annotation_reliability, cohen_kappa, krippendorff_alpha


def _ratings(table: tuple[int, int, int, int]) -> tuple[list[str], list[str]]:
    yy, yn, ny, nn = table
    r1 = ["yes"] * (yy + yn) + ["no"] * (ny + nn)
    r2 = ["yes"] * yy + ["no"] * yn + ["yes"] * ny + ["no"] * nn
    return r1, r2


# Worked examples with known kappa (Cohen's kappa article, Wikipedia): 0.4, 0.1304, 0.2593.
@pytest.mark.parametrize(
    "table,known", [((20, 5, 10, 15), 0.4), ((45, 15, 25, 15), 0.1304), ((25, 35, 5, 35), 0.2593)]
)
def test_kappa_known_examples_and_sklearn(table: tuple[int, int, int, int], known: float) -> None:
    r1, r2 = _ratings(table)
    result = cohen_kappa(r1, r2)
    assert result.value == pytest.approx(known, abs=5e-5)
    assert result.value == pytest.approx(cohen_kappa_score(r1, r2))
    assert result.ci_low is not None and result.ci_high is not None
    assert result.ci_low < result.value < result.ci_high


def test_kappa_multiclass_matches_sklearn_and_bootstrap_se() -> None:
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 4, 300)
    r1 = np.where(rng.random(300) < 0.7, truth, rng.integers(0, 4, 300))
    r2 = np.where(rng.random(300) < 0.7, truth, rng.integers(0, 4, 300))
    result = cohen_kappa(list(r1), list(r2))
    assert result.value == pytest.approx(cohen_kappa_score(r1, r2))
    boots = []
    for _ in range(400):
        idx = rng.integers(0, 300, 300)
        boots.append(cohen_kappa_score(r1[idx], r2[idx]))
    se = (result.ci_high - result.ci_low) / (2 * 1.959964)  # type: ignore[operator]
    assert se == pytest.approx(np.std(boots), rel=0.15)


def test_kappa_degenerate_and_missing() -> None:
    assert cohen_kappa(["x"] * 5, ["x"] * 5).value is None
    res = cohen_kappa(["a", "b", None, "a"], ["a", "b", "a", None])
    assert res.n_units == 2 and res.n_dropped == 2 and res.value == 1.0


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", example C: 4 observers,
# 12 units, missing values. Published: nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.
N = np.nan
K2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
        [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
    ]
)


@pytest.mark.parametrize(
    "level,published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_krippendorff_2011_example(level: str, published: float) -> None:
    result = krippendorff_alpha(K2011, level)  # type: ignore[arg-type]
    assert round(result.value, 3) == published  # type: ignore[arg-type]
    assert result.value == pytest.approx(
        krippendorff.alpha(reliability_data=K2011, level_of_measurement=level)
    )
    assert result.n_units == 11 and result.n_dropped == 1


def test_alpha_long_frame_and_bootstrap_is_seeded() -> None:
    long = pd.DataFrame(
        [
            {"unit": u, "rater": r, "value": K2011[r, u]}
            for r in range(4)
            for u in range(12)
            if not np.isnan(K2011[r, u])
        ]
    )
    one = krippendorff_alpha(long, n_boot=200, seed=1)
    assert one.value == pytest.approx(0.743, abs=5e-4)
    assert one == krippendorff_alpha(long, n_boot=200, seed=1)
    assert one.ci_low is not None and one.ci_low < one.value < one.ci_high  # type: ignore[operator]


def test_annotation_reliability_gate() -> None:
    r1, r2 = _ratings((20, 5, 10, 15))
    two = pd.DataFrame(
        [{"unit": i, "rater": "r1", "value": v} for i, v in enumerate(r1)]
        + [{"unit": i, "rater": "r2", "value": v} for i, v in enumerate(r2)]
    )
    result, gate = annotation_reliability(two)
    assert result.statistic == "cohen_kappa" and gate.verdict == "fail" and "0.6" in gate.evidence
    long = pd.DataFrame(
        [
            {"unit": u, "rater": r, "value": K2011[r, u]}
            for r in range(4)
            for u in range(12)
            if not np.isnan(K2011[r, u])
        ]
    )
    result, gate = annotation_reliability(long)
    assert result.statistic == "krippendorff_alpha" and gate.verdict == "pass"
