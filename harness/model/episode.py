"""Episode records (one line of episodes.jsonl), the run manifest (run.json) and audit instances."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import Field

from harness.model.campaign import Architecture, Campaign, Pacing
from harness.model.events import Event, FailureKind
from harness.model.versioning import SCHEMA_VERSION
from personas import Axis, CallerCondition, SpeechParams
from scenarios.base import Frozen


class BackendInfo(Frozen):
    name: str
    version: str
    model: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class Exposure(Frozen):
    """What the adapter exposes; analysis treats what is not exposed as missing, never as zero."""

    protocol: str
    turn_based: bool
    streaming: bool
    transcripts: bool
    tool_trace: bool
    fact_provisioning: bool
    input_encoding: str
    input_sample_rate: int


class EpisodeHeader(Frozen):
    """Everything fixed before the call: ids, hashes, condition, voice, seed and backends."""

    episode_id: str
    run_id: str
    pair_id: str
    caller_id: str
    side: Literal["a", "b"]
    attempt: int = Field(default=0, ge=0)
    scenario_id: str
    scenario_version: int
    scenario_sha256: str
    facts_sha256: str
    campaign_sha256: str
    plan_sha256: str
    agent: str
    architecture: Architecture | None
    adapter: str
    condition: CallerCondition
    contrast: tuple[Axis, ...]
    voice_index: int
    speech: SpeechParams
    seed: int
    replicate: int
    run_batch: str
    pacing: Pacing
    tts: BackendInfo
    asr: BackendInfo | None = None
    channel: dict[str, Any] = Field(default_factory=dict)
    exposure: Exposure | None = None


Status = Literal["completed", "failed", "cancelled"]


class EpisodeOutcome(Frozen):
    """How the call ended. Only `completed` calls can count toward a pass.

    `failed` is missing data: the harness or the caller's own voice failed (`failure_kind` on the
    harness or caller-voice side of `FAILURE_SIDE`). A call the agent did not serve is `completed`
    with terminal outcome `unresolved`, a non-service flag in `outcome_flags`, and, when an
    agent-side failure ended it, that `failure_kind`."""

    status: Status
    failure_kind: FailureKind | None = None
    termination: str
    terminal_outcome: str | None = None
    outcome_flags: tuple[str, ...] = ()
    facts_sha256_seen: str | None = None
    duration_ms: int = Field(ge=0)
    turns: int = Field(ge=0)
    n_events: int = Field(ge=0)
    events_sha256: str
    audio_file: str | None = None
    audio_sample_rate: int | None = None


class EpisodeRecord(Frozen):
    """One line of episodes.jsonl; the events live in episodes/<id>/events.jsonl."""

    schema_version: int = SCHEMA_VERSION
    header: EpisodeHeader
    outcome: EpisodeOutcome
    finished_at: dt.datetime


class Episode(Frozen):
    """A whole call in memory: header, every event, outcome."""

    header: EpisodeHeader
    events: tuple[Event, ...]
    outcome: EpisodeOutcome


class RunManifest(Frozen):
    """run.json: what was run, with which code, scenarios, plan and backends."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    created_at: dt.datetime
    voice_audit_version: str
    git_sha: str | None = None
    python: str
    platform: str
    executor: str = "local"
    campaign_file: str
    campaign: Campaign
    campaign_sha256: str
    scenario_hashes: dict[str, str]
    facts_hashes: dict[str, str]
    catalogue_sha256: str
    plan_sha256: str
    n_planned_episodes: int
    backends: dict[str, BackendInfo] = Field(default_factory=dict)


class ArtifactRef(Frozen):
    episode_id: str
    events: str
    audio: str | None = None


class ClaimTemplate(Frozen):
    comparison: str = "condition a minus condition b"
    metric_families: tuple[str, ...] = ("terminal_outcome", "path_burden", "tool_behaviour", "safety_events")
    claim: Literal["construct_validation", "paired_disparity", "architecture_comparison"] = "paired_disparity"


class AuditInstance(Frozen):
    """A = (S, C, R, L, T): what analysis consumes for one matched pair."""

    schema_version: int = SCHEMA_VERSION
    instance_id: str
    scenario_id: str
    scenario_sha256: str
    pair_id: str
    condition_a: CallerCondition
    condition_b: CallerCondition
    contrast: tuple[Axis, ...]
    architecture: Architecture | None
    agent: str
    artifact_a: ArtifactRef
    artifact_b: ArtifactRef
    claim_template: ClaimTemplate = ClaimTemplate()
