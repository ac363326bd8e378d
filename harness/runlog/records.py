"""An episode record as one flat tuple of the values analysis needs, holding no model.

A dict per record, or the validated models kept until a frame is built, cost seconds and about
0.9 GB (9 kB a record) over a 100k run; `record_row` (a C `attrgetter`) turns each record into a
tuple as it is read, so its models die at once. The fields are named here once: `RECORD_NAMES`
holds each field's last name (`plan_sha256` for `header.plan_sha256`), the name a reader of the
tuple uses.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.personas import AXES

__all__ = ["ATTEMPT_AT", "RECORD_FIELDS", "RECORD_NAMES", "SHA256_AT", "record_row"]

RECORD_FIELDS: tuple[str, ...] = (
    *(
        f"header.{f}"
        for f in (
            "episode_id",
            "run_id",
            "pair_id",
            "side",
            "caller_id",
            "attempt",
            "scenario_id",
            "scenario_version",
            "scenario_sha256",
            "facts_sha256",
            "campaign_sha256",
            "plan_sha256",
            "agent",
            "architecture",
            "adapter",
            "contrast",
            "voice_index",
            "speech.voice",
            "speech.variant",
            "speaker",
            "speaker_gender",
            "seed",
            "replicate",
            "run_batch",
            "pacing",
            *(f"condition.{a}" for a in AXES),
        )
    ),
    *(
        f"outcome.{f}"
        for f in (
            "status",
            "failure_kind",
            "termination",
            "terminal_outcome",
            "outcome_flags",
            "facts_sha256_seen",
            "duration_ms",
            "turns",
            "n_events",
            "events_sha256",
            "audio_file",
            "audio_sample_rate",
        )
    ),
)
RECORD_NAMES: tuple[str, ...] = (*(f.rsplit(".", 1)[-1] for f in RECORD_FIELDS), "exposure")
assert len(set(RECORD_NAMES)) == len(RECORD_NAMES), "record_row fields must have distinct last names"
_VALUES = attrgetter(*RECORD_FIELDS)
_NO_EXPOSURE = (None, float("nan"), float("nan"))
SHA256_AT = RECORD_NAMES.index("events_sha256")
"""Where `record_row` keeps the expected events hash."""
ATTEMPT_AT = RECORD_NAMES.index("attempt")


def record_row(rec: EpisodeRecord) -> tuple[Any, ...]:
    """The values the frame needs from one record (field order `RECORD_NAMES`), holding no model."""
    exp = rec.header.exposure
    shown = _NO_EXPOSURE if exp is None else (exp.protocol, float(exp.tool_trace), float(exp.transcripts))
    return (*_VALUES(rec), shown)
