"""Statistics layer of voice-audit: paired a - b estimates, models, corrections, calibration.

Pure numpy/pandas/scipy/statsmodels. Every function takes the long episode frame described in
``analysis.stats.pairing`` (one row per episode: ``pair_id``, ``side`` a/b, ``scenario_id``,
``voice_id``, ``run_batch``, ``agent`` and float metric columns, NaN = missing, binary as 0/1)
and reports deltas as condition a minus condition b.
"""

from analysis.stats.binary import (
    mcnemar_exact_p,
    newcombe_interval,
    paired_risk_difference,
    risk_difference_from_counts,
    tango_interval,
    wilson_interval,
)
from analysis.stats.cluster import cr2_interval, design_effect, voice_clusters
from analysis.stats.continuous import (
    PATH_BURDEN_COMPONENTS,
    BurdenDelta,
    paired_mean_delta,
    path_burden_delta,
)
from analysis.stats.estimate import CONVENTION, CONVENTION_SENTENCE, Estimate
from analysis.stats.metricframe import PairedMetricFrame
from analysis.stats.models import ModelSummary, linear_mixed, logistic_mixed
from analysis.stats.multiplicity import CorrectionPlan, adjust_p_values, adjust_within_families
from analysis.stats.pairing import PairedValues, pivot_pairs, validate_episode_frame
from analysis.stats.signflip import signflip_interval

__all__ = [
    "CONVENTION",
    "CONVENTION_SENTENCE",
    "PATH_BURDEN_COMPONENTS",
    "BurdenDelta",
    "CorrectionPlan",
    "Estimate",
    "ModelSummary",
    "PairedMetricFrame",
    "PairedValues",
    "adjust_p_values",
    "adjust_within_families",
    "cr2_interval",
    "design_effect",
    "linear_mixed",
    "logistic_mixed",
    "mcnemar_exact_p",
    "newcombe_interval",
    "paired_mean_delta",
    "paired_risk_difference",
    "path_burden_delta",
    "pivot_pairs",
    "risk_difference_from_counts",
    "signflip_interval",
    "tango_interval",
    "validate_episode_frame",
    "voice_clusters",
    "wilson_interval",
]
