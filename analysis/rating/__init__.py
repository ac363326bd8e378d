"""Blind rating app: raters judge clips in a browser, feeding the perceptibility, reliability,
observer-validity and stimulus-intelligibility gates (the last: raters type what the caller says).

``voice-audit rate RUN_DIR`` (``rate_cmd``) serves one task over a run folder; labels land in
``RUN_DIR/ratings/labels.jsonl`` (format in ``voice_audit.analysis.rating.store``); ``rating_gates`` turns them
into gate verdicts through ``voice_audit.analysis.agreement``.
"""

from voice_audit.analysis.rating.cli import rate_cmd, serve
from voice_audit.analysis.rating.rating_gates import (
    RatingGates,
    perceptibility_frame,
    quality_frame,
    rating_gates,
)
from voice_audit.analysis.rating.scales import QUALITY_SCALES, Scale
from voice_audit.analysis.rating.server import RatingServer
from voice_audit.analysis.rating.session import RatingSession
from voice_audit.analysis.rating.store import LabelRecord, LabelStore, labels_path, read_labels
from voice_audit.analysis.rating.tasks import Item, TaskSpec, build_task, rater_order

__all__ = [
    "QUALITY_SCALES",
    "Item",
    "LabelRecord",
    "LabelStore",
    "RatingGates",
    "RatingServer",
    "RatingSession",
    "Scale",
    "TaskSpec",
    "build_task",
    "labels_path",
    "perceptibility_frame",
    "quality_frame",
    "rate_cmd",
    "rater_order",
    "rating_gates",
    "read_labels",
    "serve",
]
