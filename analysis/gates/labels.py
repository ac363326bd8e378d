"""One reader for the per-turn rating tasks of `ratings/labels.jsonl` (observer, intelligibility).

Plain json, so analysis does not depend on the rating app; lines of another task or a newer format
are passed over, malformed ones are skipped and said, and the last label of a rater for a turn wins.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.metrics.quality import LABELS_VERSION
from voice_audit.harness.runlog import labels_jsonl

TURN_KEYS = ["episode_id", "turn", "rater"]


def read_turn_labels(
    run_dir: Path, task: str, columns: list[str], fields: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[pd.DataFrame, list[str]]:
    """`task`'s lines as a frame of `columns`: the turn keys, then what `fields` takes from a record."""
    path = labels_jsonl(Path(run_dir))
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    if path.exists():
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip() or not raw.endswith(b"\n"):
                    continue
                try:
                    rec = json.loads(raw)
                    if rec.get("task") != task:
                        continue
                    if int(rec.get("v", 1)) > LABELS_VERSION:
                        skipped.append(
                            f"{path}:{lineno}: label format v{rec['v']} is newer than this reader; skipped"
                        )
                        continue
                    rows.append(
                        {
                            "episode_id": str(rec["episode_id"]),
                            "turn": int(rec["turn"]),
                            "rater": str(rec["rater"]),
                            **fields(rec),
                        }
                    )
                except (ValueError, KeyError, TypeError) as exc:
                    skipped.append(f"{path}:{lineno}: invalid {task} label skipped ({type(exc).__name__})")
    frame = pd.DataFrame(rows, columns=columns)
    return frame.drop_duplicates(TURN_KEYS, keep="last").reset_index(drop=True), skipped
