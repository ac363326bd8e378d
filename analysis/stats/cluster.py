"""Voice clusters: a finding about voices rests on voices, not on replicates of one voice.

A cell is realised with a few voices per condition and each voice is called several times
(replicates, scenarios). Replicates of one voice share that voice's rendering, so they are not
independent evidence about the condition the voice stands for: the pairs of a cell fall into
clusters, and a paired interval that counts 3 voices x 7 replicates as 21 independent pairs is
as narrow as 21 voices would make it.

Clusters (`voice_clusters`): two pairs are in the same cluster when they share a voice, on either
side and whichever side it is on (the connected components of the voices a pair links; in a
planned cell, voice i of condition a always meets voice i of condition b, so a cluster is one voice
of each condition and its replicates). A voice is the speaker the episode records
(`voice_audit.analysis.metrics`: one person however many engines, rates or realisations render
them, so a person who voices both conditions, as in a wording cell, or two realisations of one
condition, is one cluster), or the realisation in records that name no speaker. Where one cell
pools several scenarios the cluster is the voice within the scenario, so a voice's replicates of
one scenario stay together.

Intervals over clusters:

* means (continuous metrics, `cr2_interval`): the cluster-robust variance with the CR2
  small-sample adjustment (Bell & McCaffrey 2002) and a t reference with G - 1 degrees of
  freedom (G clusters). For an intercept-only model CR2 has a closed form,
  V = sum_g S_g^2 / (1 - n_g / N) / N^2 with S_g the sum of the cluster's residuals, and with
  equal cluster sizes it is exactly the t-test on the G cluster means: the interval is as wide
  as G voices make it, whatever the number of replicates. With singleton clusters it is the
  paired t interval.
* risk differences (binary metrics, `design_effect`): the plan's score interval (Newcombe or
  Tango) on the paired table divided by the design effect (Rao & Scott 1992): deff = V_CR2 /
  V_iid, floored at 1 (clustering never narrows an interval) and capped at N / G (at worst each
  cluster is one observation, n_eff = G). A score interval keeps its good behaviour at 0 and 1
  (21/21 vs 0/21 is not a zero-width [1, 1]); when every pair difference is the same the
  within-cluster spread is unknown and the worst case N / G is taken. The exact McNemar p is
  computed on the scaled discordant counts (the binomial tail through the incomplete beta
  function, equal to the exact test for whole counts).

One cluster (one voice per condition, as when a backend has one speaker of an accent): no
interval over clusters exists, so the plan's interval over the pairs is kept, labelled as
speaking for those two speakers' calls only; the plan's minimum number of voices keeps such a
delta from supporting a claim (``voice_audit.analysis.disposition``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import special, stats

VOICE_COLUMNS: tuple[str, str] = ("voice_a", "voice_b")
ONE_VOICE = "one voice cluster: the interval speaks for these speakers' calls, not for their condition"
ONE_VOICE_NOTE = (
    "one voice per condition: replicates of one voice are not independent evidence about its condition, so "
    "the interval (every pair counted) is about these two speakers' calls only; no cluster-robust interval "
    "exists for one cluster, and the plan's min_voices_paired_disparity keeps such a delta from a claim"
)


def _components(links: Sequence[tuple[object, object]]) -> list[int]:
    """Connected-component id of each link (a, b) in the graph whose edges are the links."""
    parent: dict[object, object] = {}

    def find(x: object) -> object:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
    roots: dict[object, int] = {}
    return [roots.setdefault(find(a), len(roots)) for a, _ in links]


def voice_clusters(
    voice_a: Sequence[object], voice_b: Sequence[object], scenario: Sequence[object] | None = None
) -> np.ndarray:
    """Cluster label (0..G-1) of each pair: pairs sharing a voice (on either side, whichever side it
    is on: a voice is a person) share a cluster; with several scenarios, the cluster is the voice
    component within its scenario."""
    va = [str(v) for v in voice_a]
    vb = [str(v) for v in voice_b]
    if len(va) != len(vb):
        raise ValueError("voice_a and voice_b must have one entry per pair")
    comp = _components(list(zip(va, vb, strict=True)))
    if scenario is not None and len(set(map(str, scenario))) > 1:
        keys = list(zip(map(str, scenario), comp, strict=True))
        codes: dict[tuple[str, int], int] = {}
        return np.array([codes.setdefault(k, len(codes)) for k in keys], dtype=int)
    return np.asarray(comp, dtype=int)


def table_clusters(table: pd.DataFrame) -> np.ndarray | None:
    """`voice_clusters` of a paired table (`PairedValues.table`); None without voice columns."""
    if not all(c in table.columns for c in VOICE_COLUMNS):
        return None
    scen = table["scenario_id"].tolist() if "scenario_id" in table.columns else None
    return voice_clusters(table["voice_a"].tolist(), table["voice_b"].tolist(), scen)


def n_clusters(clusters: np.ndarray) -> int:
    return len(np.unique(clusters))


def cr2_variance(diff: np.ndarray, clusters: np.ndarray) -> float:
    """CR2 variance of the mean of `diff` over `clusters` (needs G >= 2)."""
    n = len(diff)
    resid = diff - diff.mean()
    labels, inverse = np.unique(clusters, return_inverse=True)
    if len(labels) < 2:
        raise ValueError("a cluster-robust variance needs at least two clusters")
    sums = np.bincount(inverse, weights=resid)
    sizes = np.bincount(inverse).astype(float)
    return float(np.sum(sums**2 / (1.0 - sizes / n)) / (n * n))


def cr2_interval(diff: np.ndarray, clusters: np.ndarray, alpha: float = 0.05) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) for the mean of `diff`: CR2 standard error, t with G - 1 df."""
    g = n_clusters(clusters)
    mean = float(diff.mean())
    se = float(np.sqrt(cr2_variance(diff, clusters)))
    if se == 0.0:
        return mean, mean, 1.0 if mean == 0 else 0.0
    q = float(stats.t.ppf(1 - alpha / 2, g - 1))
    p = float(2 * stats.t.sf(abs(mean) / se, g - 1))
    return mean - q * se, mean + q * se, p


def design_effect(diff: np.ndarray, clusters: np.ndarray) -> float:
    """Variance inflation of the mean by clustering, in [1, N / G] (see the module docstring)."""
    n = len(diff)
    g = n_clusters(clusters)
    if g >= n:
        return 1.0
    worst = n / g
    if g < 2:
        return worst
    v_iid = float(np.var(diff, ddof=1)) / n
    if v_iid == 0.0:
        return worst
    return float(min(max(cr2_variance(diff, clusters) / v_iid, 1.0), worst))


def binomial_two_sided_p(k: float, n: float) -> float:
    """Two-sided p of k successes in n trials at 1/2, for real k and n (the exact binomial test
    for whole numbers: P(X >= k) = I_{1/2}(k, n - k + 1))."""
    if n <= 0:
        return 1.0
    lo_k = min(k, n - k)
    if lo_k >= n / 2:
        return 1.0
    # P(X <= lo_k) = 1 - I_{1/2}(lo_k + 1, n - lo_k)
    tail = 1.0 - float(special.betainc(lo_k + 1, n - lo_k, 0.5))
    return min(1.0, 2.0 * tail)
