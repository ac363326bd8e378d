"""Voice-clustered paired intervals: replicates of one voice are not independent evidence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from voice_audit.analysis.stats import (
    cr2_interval,
    design_effect,
    newcombe_interval,
    paired_mean_delta,
    paired_risk_difference,
    voice_clusters,
)
from voice_audit.analysis.stats.cluster import binomial_two_sided_p
from voice_audit.analysis.stats.continuous import t_interval


def frame(
    values_a: list[float], values_b: list[float], voices: list[int], scenario: str | list[str] = "s"
) -> pd.DataFrame:
    n = len(values_a)
    scen = scenario if isinstance(scenario, list) else [scenario] * n
    rows = []
    for i in range(n):
        for side, v in (("a", values_a[i]), ("b", values_b[i])):
            rows.append(
                {
                    "pair_id": f"p{i:03d}",
                    "side": side,
                    "scenario_id": scen[i],
                    "voice_id": f"{side}#v{voices[i]}",
                    "run_batch": "b",
                    "agent": "x",
                    "m": v,
                }
            )
    return pd.DataFrame(rows)


def test_clusters_are_voice_components_and_voices_within_scenarios() -> None:
    planned = voice_clusters(["a1", "a2", "a3", "a1", "a2", "a3"], ["b1", "b2", "b3", "b1", "b2", "b3"])
    assert len(set(planned)) == 3 and planned[0] == planned[3] and planned[0] != planned[1]
    # a voice shared across two voice pairs joins them: a1 meets b1 and b2, so b2's pairs join a1's
    crossed = voice_clusters(["a1", "a1", "a2", "a3"], ["b1", "b2", "b2", "b3"])
    assert crossed[0] == crossed[1] == crossed[2] != crossed[3]
    pooled = voice_clusters(["a1", "a1", "a2", "a2"], ["b1", "b1", "b2", "b2"], ["s1", "s2", "s1", "s2"])
    assert len(set(pooled)) == 4


def test_cr2_is_the_t_test_on_cluster_means_when_balanced() -> None:
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(4), 6)
    diff = rng.normal(0.3, 1.0, 24) + np.repeat(rng.normal(0, 1, 4), 6)
    lo, hi, p = cr2_interval(diff, clusters, 0.05)
    means = np.array([diff[clusters == g].mean() for g in range(4)])
    res = stats.ttest_1samp(means, 0.0)
    ci = res.confidence_interval(0.95)
    assert lo == pytest.approx(ci.low) and hi == pytest.approx(ci.high) and p == pytest.approx(res.pvalue)
    # singleton clusters: the paired t interval
    lo1, hi1, p1 = cr2_interval(diff, np.arange(24), 0.05)
    assert (lo1, hi1, p1) == pytest.approx(t_interval(diff, 0.05))


def test_replicates_of_three_voices_get_the_interval_of_three_voices() -> None:
    # 3 voices x 7 replicates; replicates of a voice nearly repeat each other
    rng = np.random.default_rng(0)
    voice_effect = [1.0, -0.2, 0.5]
    voices = [v for v in range(3) for _ in range(7)]
    a = [voice_effect[v] + rng.normal(0, 0.05) for v in voices]
    b = [0.0] * 21
    long = frame(a, b, voices)
    plain = paired_mean_delta(long, "m", interval="signflip")
    clustered = paired_mean_delta(long, "m", interval="signflip", cluster_by_voice=True)
    assert plain.n_clusters is None and clustered.n_clusters == 3
    assert clustered.estimate == pytest.approx(plain.estimate)
    assert plain.ci_low is not None and plain.ci_low > 0  # 21 "independent" pairs: a confident effect
    assert clustered.ci_low is not None and clustered.ci_low < 0 < clustered.ci_high  # 3 voices: not
    assert "CR2" in clustered.method and "3 voice cluster" in clustered.sentence()
    # one voice per condition: no interval over clusters exists; the plan's interval is kept and labelled
    one_voice = paired_mean_delta(
        frame(a[:7], b[:7], [0] * 7), "m", interval="signflip", cluster_by_voice=True
    )
    alone = paired_mean_delta(frame(a[:7], b[:7], [0] * 7), "m", interval="signflip")
    assert one_voice.n_clusters == 1 and (one_voice.ci_low, one_voice.ci_high) == (
        alone.ci_low,
        alone.ci_high,
    )
    assert "not for their condition" in one_voice.method
    assert any("one voice per condition" in n for n in one_voice.notes)
    rd = paired_risk_difference(frame([1.0] * 7, [0.0] * 7, [0] * 7), "m", cluster_by_voice=True)
    rd_alone = paired_risk_difference(frame([1.0] * 7, [0.0] * 7, [0] * 7), "m")
    assert rd.n_clusters == 1 and (rd.ci_low, rd.ci_high) == (rd_alone.ci_low, rd_alone.ci_high)
    assert "not for their condition" in rd.method
    # a voice per pair: nothing to cluster, the plan's interval stands
    own = paired_mean_delta(frame(a, b, list(range(21))), "m", interval="signflip", cluster_by_voice=True)
    assert own.n_clusters == 21 and "sign-flip" in own.method
    assert (own.ci_low, own.ci_high) == (plain.ci_low, plain.ci_high)


def test_binary_all_one_side_rests_on_the_voices() -> None:
    voices = [v for v in range(3) for _ in range(7)]
    est = paired_risk_difference(frame([1.0] * 21, [0.0] * 21, voices), "m", cluster_by_voice=True)
    assert est.design_effect == pytest.approx(7.0) and est.n_clusters == 3
    assert (est.ci_low, est.ci_high) == pytest.approx(newcombe_interval(0, 3, 0, 0))
    assert est.p_value == pytest.approx(stats.binomtest(3, 3, 0.5).pvalue)
    plain = paired_risk_difference(frame([1.0] * 21, [0.0] * 21, voices), "m")
    assert plain.ci_low is not None and est.ci_low is not None and est.ci_low < plain.ci_low
    # independent voices: design effect 1, the unclustered interval exactly
    own = paired_risk_difference(frame([1.0] * 21, [0.0] * 21, list(range(21))), "m", cluster_by_voice=True)
    assert (own.ci_low, own.ci_high, own.p_value) == (plain.ci_low, plain.ci_high, plain.p_value)


def test_design_effect_bounds() -> None:
    diff = np.array([1.0, 0, 0, 1, 0, 0, -1, 0, 0])
    assert design_effect(diff, np.arange(9)) == 1.0
    assert 1.0 <= design_effect(diff, np.repeat(np.arange(3), 3)) <= 3.0
    assert design_effect(np.ones(9), np.repeat(np.arange(3), 3)) == 3.0


@pytest.mark.parametrize("n", [1, 4, 9, 20])
def test_binomial_p_extends_the_exact_test(n: int) -> None:
    for k in range(n + 1):
        assert binomial_two_sided_p(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue)
    ps = [binomial_two_sided_p(k / 2, n / 2) for k in range(n + 1)]
    assert all(0 <= p <= 1 for p in ps)


def test_null_rejection_under_voice_effects() -> None:
    """Voices with their own effect, no condition effect: counting pairs as independent rejects far
    more often than alpha; the clustered interval stays near it."""
    rng = np.random.default_rng(11)
    reps = 300
    g, m = 5, 8
    voices = [v for v in range(g) for _ in range(m)]
    plain = clustered = 0
    for _ in range(reps):
        u = rng.normal(0, 1.0, g)
        a = [u[v] + rng.normal(0, 0.5) for v in voices]
        long = frame(a, [0.0] * len(a), voices)
        e1 = paired_mean_delta(long, "m", interval="t")
        e2 = paired_mean_delta(long, "m", interval="t", cluster_by_voice=True)
        plain += e1.excludes_zero
        clustered += e2.excludes_zero
    assert plain / reps > 0.25
    assert clustered / reps < 0.09


def test_metricframe_pools_scenarios_with_voices_within_each() -> None:
    from voice_audit.analysis.stats import PairedMetricFrame

    voices = [v for v in range(2) for _ in range(6)] * 2
    scen = ["s1"] * 12 + ["s2"] * 12
    rng = np.random.default_rng(4)
    long = frame(list(rng.normal(0.5, 1, 24)), [0.0] * 24, voices, scen)
    pooled = PairedMetricFrame(long, {"m": "continuous"}, cluster_by_voice=True).estimates()[0]
    assert pooled.n_clusters == 4 and "df = G - 1 = 3" in pooled.method
    per = PairedMetricFrame(long, {"m": "continuous"}, by="scenario_id", cluster_by_voice=True).estimates()
    assert [e.n_clusters for e in per] == [2, 2]
    assert PairedMetricFrame(long, {"m": "continuous"}).estimates()[0].n_clusters is None
