"""The frozen analysis plan: thresholds, alpha, metric families and their corrections, hashed.

docs/method/index.md section 3 freezes thresholds before collection and hashes the plan like a scenario, so
the plan is a validated model loaded from YAML and its sha256 (over the canonical JSON of the
validated model, not the file bytes) goes into every output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from voice_audit.harness.model.stimulus import StimulusThresholds
from voice_audit.scenarios.base import Frozen, sha256_of
from voice_audit.scenarios.errors import ConfigError

DEFAULT_PLAN = Path(__file__).with_name("plans") / "default.yaml"
PLAN_VERSION = 1

FamilyName = Literal[
    "terminal_outcome",
    "path_burden",
    "tool_behaviour",
    "speech_behaviour",
    "safety_events",
    "conversation_quality",
]


class FamilyPlan(Frozen):
    correction: Literal["holm", "fdr_bh", "none"]
    metrics: tuple[str, ...]


class PerceptibilityGate(Frozen):
    min_raters: int = Field(ge=1)
    min_accuracy: float = Field(gt=0, le=1)


class AcousticGate(Frozen):
    min_r: float = Field(gt=0, le=1)
    max_files_per_cell: int = Field(ge=1)
    max_seconds_per_file: float = Field(gt=0)


class CodecGate(Frozen):
    sample_rate: int = Field(gt=0)
    channels: int = Field(ge=1)
    subtype: str
    target_lufs: float
    lufs_tolerance: float = Field(gt=0)
    max_files: int = Field(ge=1)


class CompletenessGate(Frozen):
    sync_tolerance_ms: int = Field(ge=0)
    onset_search_ms: int = Field(gt=0)
    onset_threshold_db: float = Field(lt=0)
    max_audio_files: int = Field(ge=1)


class AnnotationGate(Frozen):
    kappa: float
    alpha: float


class DifferentialFailureGate(Frozen):
    """Harness-side failures may be ignored only while they do not depend on the condition."""

    max_rate_difference: float = Field(default=0.10, ge=0, le=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)


class ObserverGate(Frozen):
    """The caller's reading against blind raters' majority (docs/method/index.md section 8)."""

    kappa: float = Field(default=0.60, gt=0, le=1)
    min_turns: int = Field(default=30, ge=1)
    min_raters: int = Field(default=2, ge=1)


class IntelligibilityGate(Frozen):
    """Raters transcribe the caller's rendered lines (the human part of the stimulus gate): each
    condition's human word error rate under a ceiling, and the a - b gap under a margin."""

    min_raters: int = Field(default=3, ge=1)
    min_words: int = Field(default=100, ge=1)
    max_wer: float = Field(default=0.25, gt=0)
    max_gap: float = Field(default=0.15, gt=0)


class GateThresholds(Frozen):
    perceptibility: PerceptibilityGate
    acoustic: AcousticGate
    codec: CodecGate
    completeness: CompletenessGate
    annotation: AnnotationGate
    observer: ObserverGate = ObserverGate()
    intelligibility: IntelligibilityGate = IntelligibilityGate()
    stimulus: StimulusThresholds = StimulusThresholds()
    failure: DifferentialFailureGate = DifferentialFailureGate()


class ClaimRules(Frozen):
    min_pairs_paired_disparity: int = Field(ge=2)
    min_agents_architecture_comparison: int = Field(ge=2)
    min_voices_paired_disparity: int = Field(
        default=3, ge=1, description="distinct voice clusters a cell needs before its delta can be a claim"
    )


class MixedModelRules(Frozen):
    enabled: bool
    min_pairs: int = Field(ge=2)
    max_episodes: int = Field(ge=4)


class RepairRules(Frozen):
    error_classifications: tuple[str, ...] = Field(min_length=1)


class AnalysisPlan(Frozen):
    plan_version: int = PLAN_VERSION
    name: str
    alpha: float = Field(gt=0, lt=1)
    binary_interval: Literal["newcombe", "tango"]
    continuous_interval: Literal["signflip", "t", "bca", "percentile"]
    interval_clusters: Literal["voice", "none"] = "voice"
    families: dict[FamilyName, FamilyPlan]
    gates: GateThresholds
    gate_scope: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    not_evaluable_counts_as: Literal["fail"] = "fail"
    claims: ClaimRules
    mixed_models: MixedModelRules
    repair: RepairRules
    smallest_effects: dict[str, float] = Field(
        default_factory=dict,
        description="per metric, the smallest |a - b| that matters (docs/method/effects.md gives each reason): "
        "findings are ranked by their size against it and release checks take it as their default tolerance",
    )

    @model_validator(mode="after")
    def _every_metric_has_a_margin(self) -> AnalysisPlan:
        if self.smallest_effects:
            missing = [m for f in self.families.values() for m in f.metrics if m not in self.smallest_effects]
            if missing:
                raise ValueError(f"smallest_effects names no margin for {', '.join(missing)}")
            bad = [m for m, v in self.smallest_effects.items() if not v > 0]
            if bad:
                raise ValueError(f"smallest_effects must be > 0 ({', '.join(bad)})")
        return self

    def smallest_effect(self, metric: str) -> float | None:
        """The plan's smallest effect of interest for `metric` (None: the plan declares none)."""
        return self.smallest_effects.get(metric)

    @property
    def sha256(self) -> str:
        return sha256_of(self)


def load_plan(path: str | Path = DEFAULT_PLAN) -> AnalysisPlan:
    """Parse and validate a plan file; a newer plan_version is refused rather than misread."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("analysis plan not found", path=p, fix="pass an existing plan YAML") from None
    if not isinstance(data, dict):
        raise ConfigError("analysis plan must be a mapping", path=p, fix="see analysis/plans/default.yaml")
    if int(data.get("plan_version", PLAN_VERSION)) > PLAN_VERSION:
        raise ConfigError(
            f"plan_version {data['plan_version']} is newer than this voice-audit reads ({PLAN_VERSION})",
            path=p,
            fix="pip install -U voice-audit",
        )
    try:
        return AnalysisPlan.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ConfigError(
            f"invalid analysis plan at {where}: {err['msg']}", path=p, fix="see analysis/plans/default.yaml"
        ) from None
