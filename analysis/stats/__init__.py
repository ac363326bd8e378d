"""Statistics layer of voice-audit: paired a - b estimates, models, corrections, calibration.

Pure numpy/pandas/scipy/statsmodels. Every function takes the long episode frame described in
``voice_audit.analysis.stats.pairing`` (one row per episode: ``pair_id``, ``side`` a/b, ``scenario_id``,
``voice_id``, ``run_batch``, ``agent`` and float metric columns, NaN = missing, binary as 0/1)
and reports deltas as condition a minus condition b.
"""

from voice_audit.analysis.stats.binary import (
    mcnemar_exact_p,
    newcombe_interval,
    paired_risk_difference,
    paired_table,
    risk_difference_from_counts,
    tango_interval,
    wilson_interval,
)
from voice_audit.analysis.stats.cluster import cr2_interval, design_effect, voice_clusters
from voice_audit.analysis.stats.continuous import (
    PATH_BURDEN_COMPONENTS,
    BurdenDelta,
    degenerate_interval,
    level_contrast_interval,
    paired_mean_delta,
    path_burden_delta,
)
from voice_audit.analysis.stats.equivalence import (
    Equivalence,
    equivalence,
    paired_rate_ratio,
    units_needed,
)
from voice_audit.analysis.stats.estimate import CONVENTION, CONVENTION_SENTENCE, Estimate
from voice_audit.analysis.stats.metricframe import PairedMetricFrame
from voice_audit.analysis.stats.models import ModelSummary, linear_mixed, logistic_mixed
from voice_audit.analysis.stats.multiplicity import CorrectionPlan, adjust_p_values, adjust_within_families
from voice_audit.analysis.stats.pairing import PairedValues, pivot_pairs, validate_episode_frame
from voice_audit.analysis.stats.signflip import signflip_interval

__all__ = [
    "CONVENTION",
    "CONVENTION_SENTENCE",
    "PATH_BURDEN_COMPONENTS",
    "BurdenDelta",
    "CorrectionPlan",
    "Equivalence",
    "Estimate",
    "ModelSummary",
    "PairedMetricFrame",
    "PairedValues",
    "adjust_p_values",
    "adjust_within_families",
    "cr2_interval",
    "degenerate_interval",
    "design_effect",
    "equivalence",
    "level_contrast_interval",
    "linear_mixed",
    "logistic_mixed",
    "mcnemar_exact_p",
    "newcombe_interval",
    "paired_mean_delta",
    "paired_rate_ratio",
    "paired_risk_difference",
    "paired_table",
    "path_burden_delta",
    "pivot_pairs",
    "risk_difference_from_counts",
    "signflip_interval",
    "tango_interval",
    "units_needed",
    "validate_episode_frame",
    "voice_clusters",
    "wilson_interval",
]
