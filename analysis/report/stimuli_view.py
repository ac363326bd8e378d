"""The report's Stimuli section: per cell, the voices, each condition's reference WER with its
interval, F0 and rate, the pre-screen verdict, and a few lines to listen to.

Also the per-cell stimulus verdict the findings use: a finding from a cell whose stimuli failed
the pre-screen (placed under an override) carries the failure and never ranks above a finding
from a cell whose stimuli pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voice_audit.analysis.gates import read_stimuli
from voice_audit.analysis.gates.stimulus import condition_key
from voice_audit.analysis.report.model import Stimuli, StimulusCell, StimulusCondition, StimulusLine
from voice_audit.harness.model.stimulus import ConditionStats, StimulusReport
from voice_audit.harness.runlog import STIMULI_AUDIO_DIR, stimuli_dir

LINES_PER_CONDITION = 4


def cell_verdicts(gates: list[dict[str, Any]]) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(scenario, condition key a, condition key b) -> (verdict, reasons) from gates.json."""
    gate = next((g for g in gates if g.get("gate") == "stimulus_prescreen"), None)
    out: dict[tuple[str, str, str], tuple[str, str]] = {}
    for c in (gate or {}).get("details", {}).get("cells", []):
        out[(str(c["scenario_id"]), str(c["condition_a"]), str(c["condition_b"]))] = (
            str(c["verdict"]),
            "; ".join(c.get("reasons", [])),
        )
    return out


def _condition(st: ConditionStats, report: StimulusReport, redact: bool) -> StimulusCondition:
    lines = [r for r in report.lines if r.condition == st.condition]
    shown: list[StimulusLine] = []
    seen: set[str] = set()
    for r in sorted(lines, key=lambda r: (-r.errors / max(r.words, 1), r.voice, r.text)):
        if r.voice in seen and len(shown) < len(st.voices):
            continue
        seen.add(r.voice)
        shown.append(
            StimulusLine(
                voice=r.voice,
                text=r.text,
                heard=r.heard,
                errors=r.errors,
                words=r.words,
                audio=None if redact else f"audio/stimuli/{Path(r.file).name}",
            )
        )
        if len(shown) >= LINES_PER_CONDITION:
            break
    return StimulusCondition(
        condition=condition_key(st.condition), backend=st.backend, voices=len(st.voices), lines=st.lines,
        wer=st.wer, wer_ci=list(st.wer_ci) if st.wer_ci else None, rate_wps=st.rate_wps,
        f0_median_hz=st.f0_median_hz, f0_range_st=st.f0_range_st, snr_db=st.snr_db, examples=shown,
    )  # fmt: skip


def build(run_dir: Path, gates: list[dict[str, Any]], redact: bool) -> tuple[Stimuli, dict[str, Path]]:
    report, why = read_stimuli(run_dir)
    if report is None:
        return Stimuli(screened=False, note=why, recogniser="", cells=[]), {}
    verdicts = cell_verdicts(gates)
    cells: list[StimulusCell] = []
    copies: dict[str, Path] = {}
    for cell in report.cells:
        key = (cell.scenario_id, condition_key(cell.a.condition), condition_key(cell.b.condition))
        verdict, reasons = verdicts.get(key, (cell.verdict, "; ".join(cell.reasons)))
        a = _condition(cell.a, report, redact)
        b = _condition(cell.b, report, redact)
        for ex in [*a.examples, *b.examples]:
            if ex.audio:
                src = stimuli_dir(run_dir) / STIMULI_AUDIO_DIR / Path(ex.audio).name
                if src.exists():
                    copies[ex.audio] = src
        cells.append(
            StimulusCell(
                pairs=list(cell.pairs),
                scenario_id=cell.scenario_id,
                verdict=verdict,
                reasons=reasons,
                overridden=cell.overridden and verdict == "fail",
                gap=cell.gap,
                gap_ci=list(cell.gap_ci) if cell.gap_ci else None,
                a=a,
                b=b,
            )
        )
    recogniser = f"{report.recogniser.get('backend', '?')} ({report.recogniser.get('model', '?')})"
    note = (
        f"Every line each voice can say, rendered through the campaign's channel and read by {recogniser} before "
        f"any call. Pre-screen: a condition's WER at most {report.thresholds.max_wer:.2f}; a gap over "
        f"{report.thresholds.max_gap:.2f} fails only when it is also a ratio over {report.thresholds.max_ratio:.1f}."
    )
    return Stimuli(screened=True, note=note, recogniser=recogniser, cells=cells), copies
