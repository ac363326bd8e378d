"""Non-contrast acoustics: a property a cell does not contrast on which its two conditions' voices
differ beyond the frozen plan's tolerance is named, with the figures, by the pilot's rule and by
gate 4 (acoustic validity); the properties an axis varies by design are never named on its cells."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pandas as pd

from voice_audit.analysis.gates.acoustic import acoustic_validity, caller_confounds
from voice_audit.analysis.gates.base import GateInputs
from voice_audit.analysis.plan import load_plan
from voice_audit.harness.model.stimulus import (
    STIMULI_FILE,
    CellScreen,
    ConditionStats,
    StimulusReport,
    StimulusThresholds,
    confounds,
)

TH = StimulusThresholds()


def _stats(label: str, rate: float, f0: float, lufs: float) -> ConditionStats:
    return ConditionStats(
        condition=label, backend="flite", voices=(f"{label}/0",), lines=21, words=200, wer=0.25,
        wer_ci=None, rate_wps=rate, f0_median_hz=f0, f0_range_st=4.0, lufs=lufs, snr_db=30.0, duration_s=60.0,
    )  # fmt: skip


RMS = _stats("us_general/male_adult/calm/none/plain", 3.63, 102.0, -21.8)
AWB = _stats("gb_scottish/male_adult/calm/none/plain", 4.22, 113.0, -20.1)


def test_a_rate_gap_on_an_accent_cell_is_named_with_its_figures() -> None:
    (found,) = confounds(RMS, AWB, ("accent",), TH)
    assert found.property == "rate" and found.a == 3.63 and found.b == 4.22
    assert abs(found.gap - 0.59 / 3.925) < 1e-9 and found.tolerance == TH.max_rate_gap
    assert found.text == "speaking rate: a 3.63, b 4.22 words/s (+15%, tolerance 6%)"


def test_gaps_within_the_tolerances_are_not_named() -> None:
    matched = AWB.model_copy(update={"rate_wps": 3.78})  # +4%
    assert confounds(RMS, matched, ("accent",), TH) == ()
    # 1.8 semitones of F0 and 1.7 LU are inside 2 st and 3 LU; beyond them they are named
    far = matched.model_copy(update={"f0_median_hz": 130.0, "lufs": -17.0})
    named = {c.property: c for c in confounds(RMS, far, ("wording",), TH)}
    assert set(named) == {"f0", "loudness"}
    assert "+4.2 semitones" in named["f0"].text and "+4.8 LU" in named["loudness"].text


def test_what_an_axis_varies_by_design_is_its_treatment_not_a_confound() -> None:
    far = AWB.model_copy(update={"f0_median_hz": 180.0, "lufs": -12.0})
    assert confounds(RMS, far, ("affect",), TH) == ()
    assert {c.property for c in confounds(RMS, far, ("voice_profile",), TH)} == {"rate", "loudness"}
    assert {c.property for c in confounds(RMS, far, ("disfluency",), TH)} == {"f0", "loudness"}


def _run(tmp_path: Path) -> Path:
    cell = CellScreen(
        pairs=("accent: General American vs Scottish English",), scenario_id="refund_duplicate_charge",
        contrast=("accent",), a=RMS, b=AWB, gap=0.02, gap_ci=None, ratio=1.1, verdict="pass", reasons=(),
        confounds=confounds(RMS, AWB, ("accent",), TH),
    )  # fmt: skip
    report = StimulusReport(
        campaign="demo", campaign_sha256="0" * 64, recogniser={}, channel={}, thresholds=TH,
        cells=(cell,), lines=(), rate_matching={"flite": "off"},
    )  # fmt: skip
    (tmp_path / "stimuli").mkdir()
    (tmp_path / "stimuli" / STIMULI_FILE).write_text(report.model_dump_json(), encoding="utf-8")
    return tmp_path


def _inputs(run_dir: Path, plan: object) -> GateInputs:
    return cast(
        GateInputs,
        SimpleNamespace(
            ing=SimpleNamespace(run_dir=run_dir),
            plan=plan,
            pairs=pd.DataFrame({"pair_id": ["p1"]}),
            episodes=pd.DataFrame({"episode_id": ["e1", "e2"]}),
            audio=False,
        ),
    )


def test_gate_4_names_the_confound_under_the_plans_tolerance(tmp_path: Path) -> None:
    plan = load_plan()
    inp = _inputs(_run(tmp_path), plan)
    (found,) = caller_confounds(inp)
    assert found["text"] == (
        "accent: General American vs Scottish English (refund_duplicate_charge): "
        "speaking rate: a 3.63, b 4.22 words/s (+15%, tolerance 6%)"
    )
    res, _, _ = acoustic_validity(inp)
    assert "speaking rate: a 3.63, b 4.22 words/s" in res.evidence
    assert res.details["caller_confounds"] == [found]
    # a plan that tolerates a 20% rate gap names nothing: the gate judges by the plan, not the record
    looser = plan.model_copy(
        update={
            "gates": plan.gates.model_copy(update={"stimulus": TH.model_copy(update={"max_rate_gap": 0.2})})
        }
    )
    assert caller_confounds(_inputs(tmp_path, looser)) == []
