"""From stored labels to the two gates: persona perceptibility and annotation reliability.

The statistics live in ``voice_audit.analysis.agreement``; this module only shapes ratings/labels.jsonl into
the frames it expects, so the thresholds and tests are defined once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from voice_audit.analysis.agreement import (
    AgreementResult,
    GateResult,
    PerceptibilityResult,
    annotation_reliability,
    perceptibility,
)
from voice_audit.analysis.rating.scales import QUALITY_SCALES
from voice_audit.analysis.rating.store import LabelRecord, read_labels
from voice_audit.scenarios.base import Frozen


class RatingGates(Frozen):
    """Per axis perceptibility, and per quality label its agreement coefficient and gate verdict."""

    perceptibility: dict[str, PerceptibilityResult]
    agreement: dict[str, AgreementResult]
    reliability: dict[str, GateResult]


def _latest(labels: Iterable[LabelRecord]) -> list[LabelRecord]:
    """One label per (task, rater, item): the last written wins if a log was ever merged by hand."""
    seen: dict[tuple[str, str, str], LabelRecord] = {}
    for rec in labels:
        seen[(rec.task, rec.rater, rec.item)] = rec
    return list(seen.values())


def perceptibility_frame(labels: Iterable[LabelRecord]) -> pd.DataFrame:
    """Columns rater, axis, intended, perceived: one row per blind judgement."""
    rows = [
        {"rater": r.rater, "axis": r.axis, "intended": r.intended, "perceived": r.perceived}
        for r in _latest(labels)
        if r.task == "perceptibility"
    ]
    return pd.DataFrame(rows, columns=["rater", "axis", "intended", "perceived"])


def quality_frame(labels: Iterable[LabelRecord], scale: str) -> pd.DataFrame:
    """Columns unit (episode), rater, value (ordinal point) for one quality label."""
    rows = [
        {"unit": r.episode_id, "rater": r.rater, "value": r.scores[scale]}
        for r in _latest(labels)
        if r.task == "quality" and scale in r.scores
    ]
    return pd.DataFrame(rows, columns=["unit", "rater", "value"])


def axis_levels(labels: Iterable[LabelRecord]) -> dict[str, list[str]]:
    """The options each axis offered: chance is one over this many, not over what raters happened to pick."""
    out: dict[str, list[str]] = {}
    for r in labels:
        if r.task == "perceptibility" and r.axis is not None:
            for level in r.options:
                if level not in out.setdefault(r.axis, []):
                    out[r.axis].append(level)
    return out


def rating_gates(
    source: str | Path | Sequence[LabelRecord],
    *,
    levels: Mapping[str, Sequence[object]] | None = None,
    alpha: float = 0.05,
) -> RatingGates:
    """Both gates from a run folder's labels (or from label records already in memory)."""
    labels = read_labels(source) if isinstance(source, str | Path) else list(source)
    percept = perceptibility_frame(labels)
    per_axis = (
        perceptibility(percept, levels=levels or axis_levels(labels), alpha=alpha) if len(percept) else {}
    )
    agreement: dict[str, AgreementResult] = {}
    reliability: dict[str, GateResult] = {}
    for scale in QUALITY_SCALES:
        frame = quality_frame(labels, scale.name)
        if frame.empty:
            continue
        result, gate = annotation_reliability(frame, level="ordinal")
        agreement[scale.name] = result
        reliability[scale.name] = gate.model_copy(update={"gate": f"annotation reliability: {scale.name}"})
    return RatingGates(perceptibility=per_axis, agreement=agreement, reliability=reliability)
