"""The validation gates: the seven of docs/method/index.md section 3 and the differential-failure and
observer-validity gates of section 8; pass / fail / not-evaluable, with evidence.

Each gate gives a run-level verdict and a verdict per pair (the audit instance), so disposition can
say which gate kept which pair or cell from supporting a claim. Thresholds come from the frozen
plan. Audio checks run on a capped, seeded sample of recordings (the cap is in the plan and the
evidence says how many were checked). One module per gate; this module runs them in order.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.audio.run_pass import AudioPass, measure_audio
from voice_audit.analysis.gates.acoustic import acoustic_validity
from voice_audit.analysis.gates.annotation import annotation_reliability
from voice_audit.analysis.gates.base import GATES, GateInputs, GateReport, GateResult, Verdict, worst
from voice_audit.analysis.gates.codec import codec_normalisation
from voice_audit.analysis.gates.completeness import artifact_completeness
from voice_audit.analysis.gates.differential_failure import differential_failure
from voice_audit.analysis.gates.fact_invariance import fact_invariance
from voice_audit.analysis.gates.intelligibility import stimulus_intelligibility
from voice_audit.analysis.gates.observer import observer_validity
from voice_audit.analysis.gates.perceptibility import persona_perceptibility, separability
from voice_audit.analysis.gates.scenario_lock import scenario_lock
from voice_audit.analysis.gates.stimulus import read_stimuli, stimulus_prescreen
from voice_audit.analysis.metrics.ingest import Ingested
from voice_audit.scenarios import ScenarioLibrary
from voice_audit.scenarios.errors import VoiceAuditError

log = logging.getLogger(__name__)

__all__ = [
    "GATES",
    "AudioPass",
    "GateInputs",
    "GateReport",
    "GateResult",
    "Verdict",
    "acoustic_validity",
    "annotation_reliability",
    "artifact_completeness",
    "codec_normalisation",
    "differential_failure",
    "evaluate",
    "fact_invariance",
    "gates_json",
    "library_for",
    "measure_audio",
    "observer_validity",
    "persona_perceptibility",
    "read_stimuli",
    "scenario_lock",
    "separability",
    "stimulus_intelligibility",
    "stimulus_prescreen",
    "worst",
]


def evaluate(inp: GateInputs) -> tuple[GateReport, pd.Series]:
    """All gates; also the validated agent F0 per episode (from the acoustic gate)."""
    pieces: list[tuple[GateResult, pd.Series]] = [
        scenario_lock(inp),
        fact_invariance(inp),
        persona_perceptibility(inp),
    ]
    ac_res, ac_pairs, f0 = acoustic_validity(inp)
    pieces += [
        (ac_res, ac_pairs),
        codec_normalisation(inp),
        artifact_completeness(inp),
        annotation_reliability(inp),
        differential_failure(inp),
        observer_validity(inp),
        stimulus_prescreen(inp),
        stimulus_intelligibility(inp),
    ]
    by_pair = (
        pd.DataFrame({res.gate: s for res, s in pieces}).reindex(inp.pairs["pair_id"]).fillna("not-evaluable")
    )
    by_pair.index.name = "pair_id"
    return GateReport(results=[r for r, _ in pieces], by_pair=by_pair), f0


def gates_json(report: GateReport, plan_sha256: str) -> dict[str, Any]:
    counts = {g: report.by_pair[g].value_counts().to_dict() for g in report.by_pair.columns}
    return {
        "plan_sha256": plan_sha256,
        "gates": [r.model_dump(mode="json") for r in report.results],
        "pairs_by_verdict": counts,
    }


def library_for(ing: Ingested, scenario_dir: str | Path | None) -> ScenarioLibrary | None:
    from voice_audit.scenarios import BUNDLED_LIBRARY

    if scenario_dir is None:
        sd = ing.manifest.campaign.scenario_dir
        scenario_dir = Path(ing.manifest.campaign_file).parent / sd if sd else BUNDLED_LIBRARY
    try:
        return ScenarioLibrary(scenario_dir)
    except VoiceAuditError as exc:
        log.warning("scenario library unavailable: %s", exc)
        return None
