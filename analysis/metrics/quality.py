"""Conversation-quality labels from the rating app's `ratings/labels.jsonl` (when it exists).

Format (written by `voice_audit.analysis.rating.store`, read here with plain json so the two stay decoupled):
one JSON object per line with at least `v` (1), `task` ("quality" | "perceptibility"), `rater`,
`episode_id`; quality lines carry `scores` {scale: 1-based point}; perceptibility lines carry
`axis`, `intended`, `perceived`. Torn, foreign or newer-version lines are counted and skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from voice_audit.analysis.metrics.catalogue import QUALITY_LABELS
from voice_audit.harness.runlog import labels_jsonl

LABELS_VERSION = 1


@dataclass
class Labels:
    """Quality scores (long: episode_id, rater, label, value) and perceptibility judgements."""

    quality: pd.DataFrame
    perceptibility: pd.DataFrame
    present: bool
    skipped: list[str] = field(default_factory=list)


def read_labels(run_dir: Path) -> Labels:
    path = labels_jsonl(run_dir)
    q_rows: list[dict[str, object]] = []
    p_rows: list[dict[str, object]] = []
    skipped: list[str] = []
    if path.exists():
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                if not raw.endswith(b"\n"):
                    skipped.append(f"{path}:{lineno}: torn last line skipped")
                    continue
                try:
                    rec = json.loads(raw)
                    if int(rec.get("v", 1)) > LABELS_VERSION:
                        skipped.append(
                            f"{path}:{lineno}: label format v{rec['v']} is newer than this reader; skipped"
                        )
                        continue
                    if rec["task"] == "quality":
                        for label, value in dict(rec.get("scores") or {}).items():
                            q_rows.append(
                                {
                                    "episode_id": str(rec["episode_id"]),
                                    "rater": str(rec["rater"]),
                                    "label": str(label),
                                    "value": float(value),
                                }
                            )
                    elif rec["task"] == "perceptibility":
                        p_rows.append(
                            {
                                "episode_id": str(rec["episode_id"]),
                                "rater": str(rec["rater"]),
                                "axis": rec["axis"],
                                "intended": rec["intended"],
                                "perceived": rec["perceived"],
                            }
                        )
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    skipped.append(f"{path}:{lineno}: invalid label skipped ({type(exc).__name__})")
    quality = pd.DataFrame(q_rows, columns=["episode_id", "rater", "label", "value"])
    percept = pd.DataFrame(p_rows, columns=["episode_id", "rater", "axis", "intended", "perceived"])
    return Labels(quality=quality, perceptibility=percept, present=path.exists(), skipped=skipped)


def extract(labels: Labels, episodes: pd.Index) -> pd.DataFrame:
    """Mean score per episode and label over raters; NaN where an episode was not rated."""
    cols = [f"quality_{q}" for q in QUALITY_LABELS]
    if labels.quality.empty:
        return pd.DataFrame(float("nan"), index=episodes, columns=cols)
    wide = labels.quality.groupby(["episode_id", "label"])["value"].mean().unstack()
    wide.columns = [f"quality_{c}" for c in wide.columns]
    return wide.reindex(index=episodes, columns=cols).astype(float)
