"""Gate 4: agent F0 is measured validly (Praat and PYIN agree per condition cell), and the callers'
voices differ in nothing acoustic but the contrast.

The second part reads the run's stimulus record: a property a cell does not contrast (speaking
rate, median F0, loudness) on which its two conditions' voices differ beyond the frozen plan's
tolerance (`gates.stimulus`) is named as a confound, with the figures, whatever the F0 verdict.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.audio import measures as audio_measures
from voice_audit.analysis.audio.run_pass import cell_key, trackers
from voice_audit.analysis.gates.base import GateInputs, GateResult, audio_pass, gate_scope, pairwise, worst
from voice_audit.analysis.gates.stimulus import read_stimuli
from voice_audit.harness.model.stimulus import confounds


def caller_confounds(inp: GateInputs) -> list[dict[str, Any]]:
    """Each cell's non-contrast acoustic confounds, re-judged under this plan's tolerances."""
    report, _ = read_stimuli(inp.ing.run_dir)
    if report is None:
        return []
    th = inp.plan.gates.stimulus
    out = []
    for cell in report.cells:
        found = confounds(cell.a, cell.b, cell.contrast, th)
        if found:
            out.append(
                {
                    "pairs": list(cell.pairs),
                    "scenario_id": cell.scenario_id,
                    "confounds": [c.model_dump(mode="json") for c in found],
                    "text": f"{cell.pairs[0]} ({cell.scenario_id}): " + "; ".join(c.text for c in found),
                }
            )
    return out


def _confound_note(found: list[dict[str, Any]]) -> str:
    if not found:
        return ""
    return " Caller confounds (voices differ in more than the contrast): " + " | ".join(
        f["text"] for f in found
    )


def acoustic_validity(inp: GateInputs) -> tuple[GateResult, pd.Series, pd.Series]:
    """Also returns the validated agent F0 median per episode (NaN where the cell did not pass)."""
    th = inp.plan.gates.acoustic
    p = inp.pairs.set_index("pair_id")
    ep = inp.episodes
    f0 = pd.Series(np.nan, index=ep["episode_id"])
    scope = gate_scope(inp.plan, "acoustic_validity")
    found = caller_confounds(inp)

    def none(why: str) -> tuple[GateResult, pd.Series, pd.Series]:
        res = GateResult(
            gate="acoustic_validity",
            verdict="not-evaluable",
            evidence=why + _confound_note(found),
            thresholds=th.model_dump(),
            scope=scope,
            details={"caller_confounds": found},
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object), f0

    if not inp.audio:
        return none(
            "audio checks disabled for this analysis; F0 metrics withheld (timing and outcome metrics only)"
        )
    missing = trackers()
    if missing is not None:
        return none(f"pitch trackers unavailable ({missing}); F0 metrics withheld")
    measured = audio_pass(inp)
    if not measured.pair_sample:
        return none("no recordings to measure; F0 metrics withheld")
    cells: dict[str, dict[str, Any]] = {}
    from voice_audit.analysis.audio.acoustics import PitchAgreement, cell_agreement

    for key, sample in measured.pair_sample.items():
        per_file = [
            PitchAgreement(
                tracker_a="praat",
                tracker_b="pyin",
                r=math.nan if m.pair_r is None else m.pair_r,
                voiced_both=int(m.pair_voiced_both or 0),
                frames=0,
            )
            for m in (measured.measures[e] for e in sample)
            if m.agent_usable
        ]
        agree = cell_agreement(per_file, th.min_r)
        cells[key] = {
            "files": agree.files,
            "min_r": audio_measures.nan_to_none(agree.min_r),
            "min_voiced_both": agree.min_voiced_both,
            "verdict": "pass" if agree.passes else ("not-evaluable" if agree.files == 0 else "fail"),
        }
    ep_key = [cell_key(a, c) for a, c in zip(ep["agent"], ep["condition_key"], strict=True)]
    ep_v = pd.Series(
        [cells.get(k, {}).get("verdict", "not-evaluable") for k in ep_key], index=ep["episode_id"]
    )
    for eid in ep_v.index[ep_v == "pass"]:
        m = measured.measures.get(str(eid))
        if m is not None and m.agent_usable and m.praat_median_hz is not None:
            f0[eid] = m.praat_median_hz
    verdict = worst([c["verdict"] for c in cells.values()])
    res = GateResult(
        gate="acoustic_validity",
        verdict=verdict,
        evidence=f"Praat vs PYIN on the agent channel, per-file minimum r per condition cell vs {th.min_r}: "
        + "; ".join(f"{k}: {c['verdict']} (min r {c['min_r']}, {c['files']} files)" for k, c in cells.items())
        + _confound_note(found),
        thresholds=th.model_dump(),
        scope=scope,
        details={"cells": cells, "audio_pass": measured.stats, "caller_confounds": found},
    )
    return res, pairwise(inp, ep_v), f0
