"""The report model: one frozen tree built once and rendered as HTML, Markdown and JSON.

Every number a renderer prints comes from here, so the three formats cannot disagree; the JSON
writer dumps this model as is. Redaction replaces values but never removes fields, so a
redacted report has the same schema as a full one.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from voice_audit.analysis.cost import CostReport
from voice_audit.analysis.report.comparison_view import Comparison
from voice_audit.scenarios.base import Frozen

REPORT_SCHEMA = "voice-audit-report/1"
Verdict = Literal["pass", "fail", "not-evaluable"]


class Hashes(Frozen):
    campaign_sha256: str
    analysis_plan_sha256: str | None
    run_plan_sha256: str
    catalogue_sha256: str
    scenario_hashes: dict[str, str]
    facts_hashes: dict[str, str]
    git_sha: str | None


class AgentRow(Frozen):
    name: str
    adapter: str
    architecture_declared: str | None
    architectures_observed: list[str]
    real_system: bool
    url: str | None
    options: dict[str, Any]
    episodes: int


class GateRow(Frozen):
    gate: str
    verdict: Verdict
    evidence: str
    thresholds: dict[str, Any]
    scope: list[str]
    pairs_by_verdict: dict[str, int]


class FamilyClaim(Frozen):
    family: str
    claim: str
    pairs_supporting: int
    drivers: list[str]


class CellClaim(Frozen):
    label: str
    claim: str
    claim_text: str
    n_pairs: int
    n_included: int
    families: list[FamilyClaim]


class Disposition(Frozen):
    claim: str
    claim_text: str
    gates_not_passed: list[str]
    architecture_comparison: dict[str, list[str]] | None
    note: str
    cells: list[CellClaim]
    instances_by_claim: dict[str, int]


class DeltaRow(Frozen):
    """One paired a - b estimate; `reading` says in words which condition fared worse, if any."""

    metric: str
    family: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    alpha: float
    p_value: float | None
    p_adjusted: float | None
    adjustment: str | None
    n_pairs: int
    n_dropped: int
    mean_a: float | None
    mean_b: float | None
    method: str
    higher_is_worse: bool | None
    proxy: bool
    reading: str
    notes: list[str]
    convention: str
    smallest_effect: float | None = Field(
        default=None,
        description="the plan's smallest effect of interest for the metric (|a - b| that matters)",
    )
    effect_size: float | None = Field(default=None, description="|estimate| / smallest_effect")
    no_interval: str | None = Field(
        default=None, description="why no interval, e.g. 'no interval: 1 speaker'"
    )

    @property
    def interval_text(self) -> str:
        """'lo to hi', or what the estimate rests on instead ('no interval: 1 speaker')."""
        if self.ci_low is not None and self.ci_high is not None:
            return f"{self.ci_low:.4g} to {self.ci_high:.4g}"
        return self.no_interval or "no interval"


class ModelRow(Frozen):
    metric: str
    method: str
    scale: str
    coefficient: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    converged: bool
    n_pairs: int
    components: list[str]
    fallback_reason: str | None
    error: str | None
    convention: str


class FamilyBlock(Frozen):
    family: str
    claim: str
    rows: list[DeltaRow]
    models: list[ModelRow]
    forest: str | None = Field(description="figure file name under figures/, when a plot was drawn")


class CellBlock(Frozen):
    index: int
    agent: str
    scenario_id: str
    contrast: str
    condition_a: str
    condition_b: str
    label: str
    n_pairs: int
    n_pairs_total: int
    n_pairs_excluded: int
    n_pairs_distinct: int | None = Field(
        default=None,
        description="pairs whose calls repeat no other pair of the cell (unknown for older analyses)",
    )
    n_voices: int | None = Field(
        default=None,
        description="distinct voices (voice clusters) of the cell's pairs (unknown for older analyses)",
    )
    intervals_over_voices: bool = Field(
        default=False, description="the cell's intervals were computed over its voice clusters"
    )
    delta_b: dict[str, float | None]
    families: list[FamilyBlock]
    notes: list[str]
    convention: str
    stimulus: str | None = Field(
        default=None,
        description="the cell's stimulus pre-screen verdict; a failing cell's findings never lead",
    )
    stimulus_reasons: str = ""


class CallCounts(Frozen):
    """Calls per agent. A call the agent did not serve (silent past the caller's patience, hung up,
    disconnected, crashed) completed with that outcome and stays in its pair; a failed or cancelled
    call is the harness's missing data. Neither ever passes."""

    agent: str
    records: int
    completed: int
    not_served: int = Field(description="completed calls the agent did not serve (a non-service flag)")
    failed: int = Field(description="calls that failed on the harness's side (missing data)")
    cancelled: int
    failure_kinds: dict[str, int]
    not_served_reasons: dict[str, int] = Field(default_factory=dict)
    acceptable: int
    acceptable_rate: float | None = Field(description="acceptable outcomes / all recorded calls")


class FailedCall(Frozen):
    episode_id: str
    pair_id: str
    agent: str
    side: str
    status: str
    failure_kind: str | None
    termination: str


class TimelineItem(Frozen):
    lane: Literal["caller", "agent", "tool", "escalation", "marker"]
    kind: str
    start_ms: int
    end_ms: int
    label: str


class TranscriptLine(Frozen):
    t_ms: int
    who: Literal["caller", "agent", "tool", "event"]
    kind: str
    text: str | None


class CallView(Frozen):
    episode_id: str
    side: Literal["a", "b"]
    condition_key: str
    voice_id: str
    status: str
    failure_kind: str | None
    not_served: str | None = Field(
        default=None, description="the non-service flag of a call the agent did not serve"
    )
    termination: str
    outcome: str | None
    duration_ms: int
    audio: str | None = Field(description="path of the copied recording, relative to the report")
    burden: dict[str, float | None]
    tool_sequence: str | None
    timeline: list[TimelineItem]
    transcript: list[TranscriptLine]
    text_redacted: bool


class PairView(Frozen):
    pair_id: str
    agent: str
    scenario_id: str
    contrast: str
    replicate: int
    why_shown: str
    included: bool
    exclusion_reason: str | None
    outcome_equal: float | None
    parity_violation: float | None
    parity_parts: dict[str, float | None]
    parity_diff: dict[str, Any] | None
    claim: str | None
    claim_drivers: str | None
    a: CallView | None
    b: CallView | None


class SubgroupTable(Frozen):
    """One table of the subgroups section; `shapley` (when given) holds each row's item contributions."""

    title: str
    convention: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    shapley: list[dict[str, float | None]] = Field(default_factory=list)


class Subgroups(Frozen):
    status: Literal["computed", "not computed"]
    source: str | None
    note: str
    tables: list[SubgroupTable]
    figures: list[str]


class Finding(Frozen):
    """One paired delta worth reading first: what differed, by how much, and what it may support."""

    rank: int
    cell_index: int
    agent: str
    scenario_id: str
    contrast: str
    metric: str
    family: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n_pairs: int
    excludes_zero: bool
    direction: Literal["b_worse", "a_worse", "higher_a", "higher_b", "none"]
    smallest_effect: float | None = Field(default=None, description="the plan's smallest effect of interest")
    effect_size: float | None = Field(
        default=None, description="|estimate| / smallest_effect: 1 is the smallest that matters"
    )
    practical: Literal["shown", "likely", "possible", "negligible", "unknown"] = Field(
        default="unknown",
        description="shown: the whole interval beyond the smallest effect; likely: the estimate beyond it and the "
        "interval excludes 0; possible: the estimate beyond it, the interval reaching 0; negligible: the estimate "
        "below it; unknown: the plan declares no smallest effect",
    )
    sentence: str = Field(description="the delta in words, sign convention included")
    claim: str
    gated: bool = Field(description="the family's claim for this cell is above diagnostics_only")
    blocked_by: list[str] = Field(description="gates not passed that keep this family diagnostic")
    status: str


class MatrixEntry(Frozen):
    """The largest delta of one family in one cell (agent x scenario x contrast)."""

    family: str
    metric: str | None
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    excludes_zero: bool
    direction: Literal["b_worse", "a_worse", "higher_a", "higher_b", "none"]
    gated: bool
    text: str


class MatrixRow(Frozen):
    cell_index: int
    agent: str
    scenario_id: str
    contrast: str
    label: str
    entries: list[MatrixEntry]


class Findings(Frozen):
    """The answer first: ranked findings and one agents x contrasts x families matrix."""

    headline: str
    convention: str
    ranked: list[Finding]
    families: list[str]
    matrix: list[MatrixRow]
    rule: str


class SafetyRow(Frozen):
    """Calls flagged for one safety metric, per agent and side (every safety metric, gated or not)."""

    metric: str
    description: str
    in_plan: bool
    agent: str
    flagged_a: int
    calls_a: int
    flagged_b: int
    calls_b: int


class MethodSection(Frozen):
    number: int
    title: str
    text: str


class Redaction(Frozen):
    redacted: bool
    dropped: list[str]
    secrets_masked: int


class StimulusLine(Frozen):
    voice: str
    text: str
    heard: str
    errors: int
    words: int
    audio: str | None = Field(description="report-relative audio file (none in a redacted report)")


class StimulusCondition(Frozen):
    condition: str
    backend: str
    voices: int
    lines: int
    wer: float | None
    wer_ci: list[float] | None
    rate_wps: float | None
    f0_median_hz: float | None
    f0_range_st: float | None
    snr_db: float | None
    examples: list[StimulusLine]


class StimulusCell(Frozen):
    pairs: list[str]
    scenario_id: str
    verdict: str
    reasons: str
    overridden: bool = Field(
        description="calls were placed although the stimuli failed (the campaign's override)"
    )
    gap: float | None
    gap_ci: list[float] | None
    a: StimulusCondition
    b: StimulusCondition


class Stimuli(Frozen):
    """The stimulus pilot of the run: what each condition's audio was, before any call."""

    screened: bool
    note: str
    recogniser: str
    cells: list[StimulusCell]


class Report(Frozen):
    schema_: str = Field(default=REPORT_SCHEMA, alias="schema")
    run_id: str
    campaign: str
    description: str
    created_at: str
    generated_at: str
    convention: str
    convention_text: str
    hashes: Hashes
    agents: list[AgentRow]
    episodes: dict[str, Any]
    warnings: list[str]
    gates: list[GateRow]
    disposition: Disposition
    cells: list[CellBlock]
    calls: list[CallCounts]
    failed_calls: list[FailedCall]
    pairs_total: int
    pairs_shown: list[PairView]
    pair_selection: str
    subgroups: Subgroups
    comparison: Comparison | None = None
    redaction: Redaction
    findings: Findings
    safety: list[SafetyRow]
    method: list[MethodSection]
    stimuli: Stimuli | None = None
    cost: CostReport | None = None

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
