"""A Fairlearn-``MetricFrame``-like view of paired metrics, with the a - b convention on every table.

``PairedMetricFrame(frame, metrics=..., families=...)`` takes the long episode frame (see
``voice_audit.analysis.stats.pairing``) and exposes

* ``overall``      -- per metric (and group): mean over the episodes of complete pairs;
* ``by_condition`` -- per metric (and group): the condition means ``a`` and ``b``;
* ``delta()``      -- the point deltas a - b;
* ``delta_ci()``   -- deltas with interval, p, family-wise adjusted p, method and pair counts;
* ``estimates()``  -- the same as ``Estimate`` objects.

``metrics`` is either a mapping metric -> ``"binary"``/``"continuous"`` (preferred: explicit) or
a list, in which case a metric whose observed values are all 0/1 is treated as binary. A metric
with no declared family is its own family, so no correction ever spans undeclared metrics.
``by`` groups by pair-level keys (``scenario_id``, ``agent``, ``run_batch``); voice and side vary
within a pair and cannot be grouping keys. Corrections (``corrections``: family -> method) are
applied within each family over all of that family's rows in the table. ``cluster_by_voice``
computes the intervals over voice clusters as ``voice_audit.analysis.deltas`` does (``cluster.py``); where a
group pools several scenarios, a cluster is a voice within its scenario.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

import numpy as np
import pandas as pd

from voice_audit.analysis.stats.binary import BinaryInterval, paired_risk_difference
from voice_audit.analysis.stats.continuous import ContinuousInterval, paired_mean_delta
from voice_audit.analysis.stats.estimate import CONVENTION, CONVENTION_SENTENCE, Estimate, MetricKind
from voice_audit.analysis.stats.multiplicity import Correction, adjust_within_families
from voice_audit.analysis.stats.pairing import PAIR_KEYS, PairedValues, pivot_pairs, validate_episode_frame


def infer_kind(values: pd.Series) -> MetricKind:
    """``binary`` when every observed value is 0 or 1, else ``continuous``."""
    observed = values.dropna().unique()
    return "binary" if len(observed) and np.isin(observed, [0.0, 1.0]).all() else "continuous"


class PairedMetricFrame:
    """Paired a - b summaries of several metrics, optionally grouped by pair-level keys."""

    def __init__(
        self,
        frame: pd.DataFrame,
        metrics: Mapping[str, MetricKind] | Sequence[str],
        families: Mapping[str, str] | None = None,
        *,
        by: str | Sequence[str] | None = None,
        alpha: float = 0.05,
        corrections: Mapping[str, Correction] | None = None,
        binary_interval: BinaryInterval = "newcombe",
        continuous_interval: ContinuousInterval = "signflip",
        n_boot: int = 4999,
        seed: int = 0,
        cluster_by_voice: bool = False,
    ) -> None:
        names = list(metrics)
        validate_episode_frame(frame, names)
        self.frame = frame
        self.kinds: dict[str, MetricKind] = (
            dict(metrics) if isinstance(metrics, Mapping) else {m: infer_kind(frame[m]) for m in names}
        )
        self.families = {m: (families or {}).get(m, m) for m in names}
        self.by: tuple[str, ...] = (by,) if isinstance(by, str) else tuple(by or ())
        bad = [k for k in self.by if k not in PAIR_KEYS]
        if bad:
            raise ValueError(f"can only group by pair-level keys {PAIR_KEYS}, not {bad}")
        self.alpha = alpha
        self.corrections: dict[str, Correction] = {f: "none" for f in self.families.values()}
        self.corrections.update(corrections or {})
        self.binary_interval = binary_interval
        self.continuous_interval = continuous_interval
        self.n_boot = n_boot
        self.seed = seed
        self.cluster_by_voice = cluster_by_voice

    @property
    def convention(self) -> str:
        return CONVENTION_SENTENCE

    def _groups(self) -> list[tuple[dict[str, str], pd.DataFrame]]:
        if not self.by:
            return [({}, self.frame)]
        return [
            (dict(zip(self.by, map(str, key if isinstance(key, tuple) else (key,)), strict=True)), sub)
            for key, sub in self.frame.groupby(list(self.by), sort=True)
        ]

    @cached_property
    def _paired(self) -> list[tuple[dict[str, str], PairedValues]]:
        return [(group, pivot_pairs(sub, m)) for group, sub in self._groups() for m in self.kinds]

    def _index(self, rows: list[dict[str, object]]) -> pd.DataFrame:
        table = pd.DataFrame(rows).set_index([*self.by, "metric"])
        table.attrs["convention"] = CONVENTION_SENTENCE
        return table

    @property
    def overall(self) -> pd.DataFrame:
        return self._index(
            [
                {
                    **group,
                    "metric": pv.metric,
                    "mean": float(np.mean(np.r_[pv.a, pv.b])) if pv.n_pairs else np.nan,
                    "n_episodes": 2 * pv.n_pairs,
                    "n_pairs": pv.n_pairs,
                    "n_dropped": pv.n_dropped,
                }
                for group, pv in self._paired
            ]
        )

    @property
    def by_condition(self) -> pd.DataFrame:
        return self._index(
            [
                {
                    **group,
                    "metric": pv.metric,
                    "a": float(pv.a.mean()) if pv.n_pairs else np.nan,
                    "b": float(pv.b.mean()) if pv.n_pairs else np.nan,
                    "n_pairs": pv.n_pairs,
                }
                for group, pv in self._paired
            ]
        )

    def delta(self) -> pd.Series:
        """Point deltas a - b (NaN where not estimable)."""
        series = self.delta_ci()["estimate"].rename(f"delta ({CONVENTION})")
        series.attrs["convention"] = CONVENTION_SENTENCE
        return series

    @cached_property
    def _estimates(self) -> list[Estimate]:
        raw: list[Estimate] = []
        for group, pv in self._paired:
            family = self.families[pv.metric]
            if self.kinds[pv.metric] == "binary":
                raw.append(
                    paired_risk_difference(
                        pv,
                        family=family,
                        alpha=self.alpha,
                        interval=self.binary_interval,
                        group=group,
                        cluster_by_voice=self.cluster_by_voice,
                    )
                )
            else:
                raw.append(
                    paired_mean_delta(
                        pv,
                        family=family,
                        alpha=self.alpha,
                        interval=self.continuous_interval,
                        n_boot=self.n_boot,
                        seed=self.seed,
                        group=group,
                        cluster_by_voice=self.cluster_by_voice,
                    )
                )
        return adjust_within_families(raw, self.corrections)

    def estimates(self) -> list[Estimate]:
        return list(self._estimates)

    def delta_ci(self) -> pd.DataFrame:
        """One row per (group, metric): estimate, interval, p, adjusted p, method, counts."""
        return self._index(
            [
                {
                    **e.group,
                    "metric": e.metric,
                    "family": e.family,
                    "kind": self.kinds[e.metric],
                    "estimate": np.nan if e.estimate is None else e.estimate,
                    "ci_low": np.nan if e.ci_low is None else e.ci_low,
                    "ci_high": np.nan if e.ci_high is None else e.ci_high,
                    "p_value": np.nan if e.p_value is None else e.p_value,
                    "p_adjusted": np.nan if e.p_adjusted is None else e.p_adjusted,
                    "adjustment": e.adjustment,
                    "n_pairs": e.n_pairs,
                    "n_dropped": e.n_dropped,
                    "method": e.method,
                    "convention": e.convention,
                }
                for e in self._estimates
            ]
        )
