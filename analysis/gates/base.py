"""What every gate shares: the verdicts, the result and input records, and the pairwise rule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
from pydantic import Field

from voice_audit.analysis.audio.run_pass import AudioPass, measure_audio
from voice_audit.analysis.metrics.ingest import Ingested
from voice_audit.analysis.metrics.quality import Labels
from voice_audit.analysis.plan import AnalysisPlan
from voice_audit.scenarios import Scenario, ScenarioLibrary
from voice_audit.scenarios.base import Frozen

Verdict = Literal["pass", "fail", "not-evaluable"]
GATES: tuple[str, ...] = (
    "scenario_lock",
    "fact_invariance",
    "persona_perceptibility",
    "acoustic_validity",
    "codec_normalisation",
    "artifact_completeness",
    "annotation_reliability",
    "differential_failure",
    "observer_validity",
    "stimulus_prescreen",
    "stimulus_intelligibility",
)
_RANK = {"pass": 0, "not-evaluable": 1, "fail": 2}


class GateResult(Frozen):
    gate: str
    verdict: Verdict
    evidence: str
    thresholds: dict[str, Any]
    scope: tuple[str, ...]
    details: dict[str, Any]
    diagnostics: dict[str, Any] = Field(default_factory=dict)


@dataclass
class GateInputs:
    ing: Ingested
    episodes: pd.DataFrame  # ingest frame + metrics, index episode_id
    pairs: pd.DataFrame
    scenarios: Mapping[str, Scenario | None]
    library: ScenarioLibrary | None
    labels: Labels
    plan: AnalysisPlan
    audio: bool = True
    seed: int = 0
    audio_workers: int | None = None  # processes of the audio pass (default: one per CPU)
    audio_measured: AudioPass | None = None  # filled by the first audio gate, shared with the next


@dataclass
class GateReport:
    results: list[GateResult]
    by_pair: pd.DataFrame  # index pair_id, one verdict column per gate

    def result(self, gate: str) -> GateResult:
        return next(r for r in self.results if r.gate == gate)


def worst(values: pd.Series | list[str]) -> Verdict:
    vals = list(values)
    if not vals:
        return "not-evaluable"
    return max(vals, key=lambda v: _RANK[v])


def pairwise(inp: GateInputs, ep_verdict: pd.Series) -> pd.Series:
    """Worst verdict of a pair's two episodes; a missing side makes it not-evaluable."""
    p = inp.pairs.set_index("pair_id")
    va = p["episode_id_a"].map(ep_verdict).fillna("not-evaluable")
    vb = p["episode_id_b"].map(ep_verdict).fillna("not-evaluable")
    return pd.Series([worst([x, y]) for x, y in zip(va, vb, strict=True)], index=p.index)


def gate_scope(plan: AnalysisPlan, gate: str) -> tuple[str, ...]:
    return plan.gate_scope.get(gate, ("all",))


def audio_pass(inp: GateInputs) -> AudioPass:
    """The run's one audio pass (`measure_audio`), unless the pipeline measured it already."""
    if inp.audio_measured is None:
        inp.audio_measured = measure_audio(
            inp.ing.run_dir, inp.episodes, inp.plan, inp.seed, workers=inp.audio_workers
        )
    return inp.audio_measured
