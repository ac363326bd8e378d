"""The stimulus pre-screen gate (docs/method/index.md section 8): is each condition's audio a person's speech,
not an engine's failure?

The run's stimulus pilot (`stimuli/stimuli.json`, written by `voice-audit run`) holds every line of
every voice as the agent received it and what the reference recogniser heard. The gate re-screens
each cell under the frozen plan's thresholds with the same rule the run applied
(`voice_audit.harness.model.stimulus.screen`): a cell the run placed calls for only under an override fails
here, so its findings carry the failure and never lead. A run whose stimuli were not screened is
not-evaluable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from voice_audit.analysis.gates.base import GateInputs, GateResult, Verdict, gate_scope, worst
from voice_audit.harness.model.stimulus import STIMULI_FILE, STIMULI_SCHEMA_VERSION, StimulusReport, screen
from voice_audit.harness.runlog import stimuli_dir
from voice_audit.personas import AXES


def read_stimuli(run_dir: Path) -> tuple[StimulusReport | None, str]:
    """The run's stimulus record, or None and why not."""
    path = stimuli_dir(run_dir) / STIMULI_FILE
    if not path.exists():
        return None, "the run's stimuli were not screened (run without --no-stimulus-check to screen them)"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{path}: unreadable ({exc})"
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if not isinstance(version, int) or version > STIMULI_SCHEMA_VERSION:
        return (
            None,
            f"{path}: schema_version {version!r} is newer than this analysis reads ({STIMULI_SCHEMA_VERSION})",
        )
    try:
        return StimulusReport.model_validate(raw), ""
    except ValidationError as exc:
        return None, f"{path}: not a stimulus record ({exc.errors()[0]['msg']})"


def condition_key(label: str) -> str:
    """The analysis's condition key ("accent=..|voice_profile=..") of a pilot's condition label ("a/b/..")."""
    return "|".join(f"{axis}={value}" for axis, value in zip(AXES, label.split("/"), strict=True))


def cell_verdicts(report: StimulusReport, inp: GateInputs) -> dict[tuple[str, str, str], dict[str, Any]]:
    th = inp.plan.gates.stimulus
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for cell in report.cells:
        verdict, reasons = screen(cell.a, cell.b, th)
        out[(cell.scenario_id, condition_key(cell.a.condition), condition_key(cell.b.condition))] = {
            "pairs": list(cell.pairs),
            "verdict": verdict,
            "reasons": list(reasons),
            "overridden": verdict == "fail" and cell.overridden,
            "wer_a": cell.a.wer,
            "wer_b": cell.b.wer,
            "wer_a_ci": cell.a.wer_ci,
            "wer_b_ci": cell.b.wer_ci,
            "gap": cell.gap,
            "gap_ci": cell.gap_ci,
            "voices_a": len(cell.a.voices),
            "voices_b": len(cell.b.voices),
        }
    return out


def stimulus_prescreen(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    th = inp.plan.gates.stimulus
    p = inp.pairs.set_index("pair_id")
    scope = gate_scope(inp.plan, "stimulus_prescreen")
    report, why = read_stimuli(inp.ing.run_dir)
    if report is None:
        res = GateResult(
            gate="stimulus_prescreen",
            verdict="not-evaluable",
            evidence=why,
            thresholds=th.model_dump(),
            scope=scope,
            details={},
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object)
    cells = cell_verdicts(report, inp)
    keys = zip(
        p["scenario_id"].astype(str),
        p["condition_key_a"].astype(str),
        p["condition_key_b"].astype(str),
        strict=True,
    )
    pair_v: list[Verdict] = [cells.get(k, {}).get("verdict", "not-evaluable") for k in keys]
    by_pair = pd.Series(pair_v, index=p.index, dtype=object)
    verdict = worst(list(by_pair)) if len(by_pair) else "not-evaluable"
    res = GateResult(
        gate="stimulus_prescreen",
        verdict=verdict,
        evidence=f"reference recogniser {report.recogniser.get('backend', '?')} ({report.recogniser.get('model', '?')}) "
        f"on {len(report.lines)} rendered lines; per cell: "
        + "; ".join(
            f"{c['pairs'][0]}: {c['verdict']}{' (calls placed under an override)' if c['overridden'] else ''} "
            f"(WER a {_f(c['wer_a'])}, b {_f(c['wer_b'])})"
            for c in cells.values()
        ),
        thresholds=th.model_dump(),
        scope=scope,
        details={
            "cells": [
                {"scenario_id": k[0], "condition_a": k[1], "condition_b": k[2], **v} for k, v in cells.items()
            ],
            "recogniser": report.recogniser,
            "channel": report.channel,
        },
    )
    return res, by_pair


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
