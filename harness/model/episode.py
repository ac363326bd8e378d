"""Episode records (one line of episodes.jsonl), the run manifest (run.json) and audit instances."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import Field

from voice_audit.harness.model.campaign import Architecture, Campaign, Pacing
from voice_audit.harness.model.events import Event, FailureKind
from voice_audit.harness.model.usage import BudgetStop
from voice_audit.harness.model.versioning import SCHEMA_VERSION
from voice_audit.personas import Axis, CallerCondition, SpeechParams
from voice_audit.scenarios.base import Frozen


class BackendInfo(Frozen):
    name: str = Field(
        description="Backend name as the campaign selects it.", examples=["espeak", "piper", "faster-whisper"]
    )
    version: str = Field(
        description="Version of the library or engine that ran, as it reports itself.",
        examples=["espeakng-loader 0.2.4"],
    )
    model: str | None = Field(
        default=None,
        description="Model file or name the backend loaded; None for a backend without a model (eSpeak NG).",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Backend settings that shape its output (credentials masked); empty when there are none.",
    )


class Exposure(Frozen):
    """What the adapter exposes; analysis treats what is not exposed as missing, never as zero."""

    protocol: str = Field(
        description="How the harness talks to the agent.",
        examples=["in-process", "http", "ws", "twilio", "realtime"],
    )
    turn_based: bool = Field(
        description="The agent answers whole caller turns (true) rather than a live audio stream."
    )
    streaming: bool = Field(
        description="The agent streams audio both ways, so barge-in and timing are measured live."
    )
    transcripts: bool = Field(
        description="The agent reports the text of what it says; false: the harness hears the agent through ASR."
    )
    tool_trace: bool = Field(
        description="The agent reports its tool calls and results; false: tool metrics are missing, not zero."
    )
    fact_provisioning: bool = Field(
        description="The agent reports the facts hash it was given; false: fact provisioning cannot be verified."
    )
    input_encoding: str = Field(
        description="Audio encoding the agent takes from the caller.", examples=["pcm16", "mulaw"]
    )
    input_sample_rate: int = Field(
        description="Sample rate of the caller audio the agent takes, in Hz.", examples=[16000, 8000]
    )


class EpisodeHeader(Frozen):
    """Everything fixed before the call: ids, hashes, condition, voice, seed and backends."""

    episode_id: str = Field(
        description="Id of this call, unique in the plan; names the folder episodes/<episode_id>/.",
        examples=["eb62432d566c48fb"],
    )
    run_id: str = Field(
        description="Id of the run (the run folder's run.json `run_id`).",
        examples=["demo-20261201T205301Z-3fa2c1"],
    )
    pair_id: str = Field(
        description="Id of the matched pair; both sides of a pair share it.", examples=["c64fac3775c6"]
    )
    caller_id: str = Field(
        description="Id of the synthetic caller: the pair's caller key plus the side letter.",
        examples=["d4b2505c5f44a"],
    )
    side: Literal["a", "b"] = Field(
        description="Which side of the matched pair this call is (condition_a or condition_b)."
    )
    attempt: int = Field(
        default=0,
        ge=0,
        description="Retry number of this call: 0 for the first attempt, 1 and up for retries after a failed attempt.",
    )
    scenario_id: str = Field(
        description="Id of the scenario the call ran.", examples=["refund_duplicate_charge"]
    )
    scenario_version: int = Field(description="Version of the scenario, from its file.")
    scenario_sha256: str = Field(
        description="SHA-256 (hex) of the scenario's canonical JSON, as locked.",
        examples=["a94d49770d1e1526c0550a617cac45193b6618564aa2d8d750af98605ce183d2"],
    )
    facts_sha256: str = Field(
        description="SHA-256 (hex) of the canonical JSON of the facts the agent was given.",
        examples=["185706a5cef05770d563d9ea6b3c43b500f77e7d1afa0fe09374e0e430b01391"],
    )
    campaign_sha256: str = Field(
        description="SHA-256 (hex) of the campaign's canonical JSON.",
        examples=["8773260054cf04ec87d8c61eb0a0212f7bbbf965df646a0c5227861c0efa0675"],
    )
    plan_sha256: str = Field(
        description="SHA-256 (hex) of the plan (every planned call) this call belongs to.",
        examples=["952ac33566587bb714ef115b536e5f1c657380f7a2f735647adbf4c47ae4aa29"],
    )
    agent: str = Field(
        description="Name of the agent called, as the campaign names it.", examples=["reference"]
    )
    architecture: Architecture | None = Field(
        description="Agent architecture, as the agent declares it or else the campaign; None when neither says.",
        examples=["casc", "hyb"],
    )
    adapter: str = Field(
        description="Adapter that connected the agent: a bundled name or module:attr.",
        examples=["scripted", "http", "mypkg.agent:make_adapter"],
    )
    condition: CallerCondition = Field(
        description="The caller condition of this side: a level on every persona axis."
    )
    contrast: tuple[Axis, ...] = Field(
        description="Persona axes on which the pair's two sides differ; empty for an A/A pair.",
        examples=[["accent"]],
    )
    voice_index: int = Field(
        description="Which realisation of the voice profile was used (0-based); both sides use the same index."
    )
    speech: SpeechParams = Field(description="The voice parameters the caller's speech was synthesised with.")
    speaker: str | None = Field(
        default=None,
        description=(
            "Who voiced the caller: the person the backend's voice for this realisation was recorded from, one "
            "id however many engines or rates render them (the voice catalogue's speaker, e.g. Flite's kal and "
            "kal16 are both cmu-kal), or the backend's own voice id; None when the backend does not say who "
            "speaks (recordings, a custom backend) and in records before schema version 4. Analysis clusters "
            "its intervals by it: the speaker, not the realisation, is the unit of evidence."
        ),
        examples=["cmu-rms", "azure-en-US-Jenny", "espeak:en-us+m1"],
    )
    speaker_gender: Literal["female", "male"] | None = Field(
        default=None,
        description=(
            "The recorded speaker's gender, from the voice catalogue; None for a synthetic voice or an "
            "uncatalogued one (the voice profile's gender then describes the caller)."
        ),
    )
    seed: int = Field(
        description="Seed of the pair's random draws (wording, disfluency), shared by both sides."
    )
    replicate: int = Field(description="Replicate number of the pair (0-based).")
    run_batch: str = Field(description="The campaign's batch label, for pooling runs.", examples=["b1"])
    pacing: Pacing = Field(
        description="`realtime`: the episode clock is wall time; `accelerated`: a virtual clock advanced by audio durations and agent compute."
    )
    tts: BackendInfo = Field(description="The text-to-speech backend that voiced the caller.")
    asr: BackendInfo | None = Field(
        default=None,
        description="The speech recogniser that checked the caller's audio and heard the agent; None when no ASR ran.",
    )
    channel: dict[str, Any] = Field(
        default_factory=dict,
        description="Audio channel between caller and agent: telephone simulation, noise SNR in dB, packet loss, resampling path and codec.",
        examples=[{"telephone": True, "snr_db": None, "packet_loss": 0.0, "codec": "G.711 mu-law"}],
    )
    exposure: Exposure | None = Field(
        default=None,
        description="What the agent exposed on this call; None in older records, where analysis infers tool-trace exposure per agent.",
    )


Status = Literal["completed", "failed", "cancelled"]


class EpisodeOutcome(Frozen):
    """How the call ended. Only `completed` calls can count toward a pass.

    `failed` is missing data: the harness or the caller's own voice failed (`failure_kind` on the
    harness or caller-voice side of `FAILURE_SIDE`). A call the agent did not serve is `completed`
    with terminal outcome `unresolved`, a non-service flag in `outcome_flags`, and, when an
    agent-side failure ended it, that `failure_kind`."""

    status: Status = Field(
        description="`completed`: the call ran to an end and can count; `failed`: missing data (harness or caller-voice failure); `cancelled`: the run was stopped."
    )
    failure_kind: FailureKind | None = Field(
        default=None,
        description="Machine-readable failure kind (its side is in FAILURE_SIDE); None when nothing failed.",
        examples=["timeout_turn", "disconnect"],
    )
    termination: str = Field(
        description="Human-readable reason the call ended.",
        examples=["caller hung up: agent confirmed the remedy"],
    )
    terminal_outcome: str | None = Field(
        default=None,
        description="Outcome the call ended in, by the scenario's outcome rules; None unless `status` is completed.",
        examples=["refund_issued", "unresolved"],
    )
    outcome_flags: tuple[str, ...] = Field(
        default=(),
        description="Flags raised beside the outcome (for example a non-service flag or a ticket opened); empty when none.",
    )
    facts_sha256_seen: str | None = Field(
        default=None,
        description="Facts hash the agent reported it was given; None when the agent did not report one.",
        examples=["185706a5cef05770d563d9ea6b3c43b500f77e7d1afa0fe09374e0e430b01391"],
    )
    duration_ms: int = Field(
        ge=0, description="Length of the call in ms on the episode clock (the last event's `t_ms`)."
    )
    turns: int = Field(
        ge=0,
        description=(
            "Number of caller turns spoken in the call: caller utterances started, in every pacing and "
            "however the call ended (events carry `turn` 0 before the first). Schema versions before 3 "
            "counted one more when the caller hung up without a line; analysis recounts those from the events."
        ),
    )
    n_events: int = Field(ge=0, description="Number of lines in the call's events.jsonl.")
    events_sha256: str = Field(
        description="SHA-256 (hex) of the call's events.jsonl bytes, so the log can be checked untouched.",
        examples=["6a1986ad7a046d1b1772286f72e77294f5a818f6ee65feaa8fed0f85a6cdd8dc"],
    )
    audio_file: str | None = Field(
        default=None,
        description="Path of the call recording, relative to the run folder; None when no recording was written.",
        examples=["episodes/eb62432d566c48fb/call.wav"],
    )
    audio_sample_rate: int | None = Field(
        default=None,
        description="Sample rate of the call recording in Hz; None when there is no recording.",
        examples=[8000],
    )


class EpisodeRecord(Frozen):
    """One line of episodes.jsonl; the events live in episodes/<id>/events.jsonl."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Version of the episode record format.")
    header: EpisodeHeader = Field(description="Everything fixed before the call.")
    outcome: EpisodeOutcome = Field(description="How the call ended.")
    finished_at: dt.datetime = Field(
        description="When the record was written, UTC, ISO 8601.", examples=["2026-12-01T20:53:06.276950Z"]
    )


class Episode(Frozen):
    """A whole call in memory: header, every event, outcome."""

    header: EpisodeHeader = Field(description="Everything fixed before the call.")
    events: tuple[Event, ...] = Field(description="Every event of the call, in order.")
    outcome: EpisodeOutcome = Field(description="How the call ended.")


class RunManifest(Frozen):
    """run.json: what was run, with which code, scenarios, plan and backends."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Version of the run manifest format.")
    run_id: str = Field(
        description="Id of the run: campaign name, UTC start time and a random suffix.",
        examples=["demo-20261201T205301Z-3fa2c1"],
    )
    created_at: dt.datetime = Field(
        description="When the run started, UTC, ISO 8601.", examples=["2026-12-01T20:53:01.123456Z"]
    )
    voice_audit_version: str = Field(
        description="Version of the voice-audit package that ran.", examples=["0.1.0"]
    )
    git_sha: str | None = Field(
        default=None,
        description="Git commit of the voice-audit source; None when not run from a git checkout.",
        examples=["50c2b2f0e1d4c3b2a1908f7e6d5c4b3a29180706"],
    )
    python: str = Field(description="Python version that ran.", examples=["3.12.3"])
    platform: str = Field(
        description="Operating system and machine, as Python's platform.platform() gives it.",
        examples=["Linux-6.8.0-x86_64-with-glibc2.39"],
    )
    executor: str = Field(default="local", description="Where the calls ran.", examples=["local", "ray"])
    campaign_file: str = Field(
        description="Absolute path of the campaign file the run was started from.",
        examples=["/home/me/audits/demo.yaml"],
    )
    campaign: Campaign = Field(description="The campaign as run, with every credential masked.")
    campaign_sha256: str = Field(
        description="SHA-256 (hex) of the campaign's canonical JSON as loaded (before masking); every episode header carries the same hash.",
        examples=["8773260054cf04ec87d8c61eb0a0212f7bbbf965df646a0c5227861c0efa0675"],
    )
    scenario_hashes: dict[str, str] = Field(
        description="SHA-256 (hex) of each scenario's canonical JSON, by scenario id.",
        examples=[
            {"refund_duplicate_charge": "a94d49770d1e1526c0550a617cac45193b6618564aa2d8d750af98605ce183d2"}
        ],
    )
    facts_hashes: dict[str, str] = Field(
        description="SHA-256 (hex) of each scenario's facts, by scenario id.",
        examples=[
            {"refund_duplicate_charge": "185706a5cef05770d563d9ea6b3c43b500f77e7d1afa0fe09374e0e430b01391"}
        ],
    )
    catalogue_sha256: str = Field(
        description="SHA-256 (hex) of the persona catalogue's canonical JSON.",
        examples=["52e34e4477c08bda4bcb33e3f67148eb8b7cb80ba36036ba9c67cc5c047607c5"],
    )
    plan_sha256: str = Field(
        description="SHA-256 (hex) of the plan: every planned call.",
        examples=["952ac33566587bb714ef115b536e5f1c657380f7a2f735647adbf4c47ae4aa29"],
    )
    n_planned_episodes: int = Field(
        description="Number of calls the plan holds (two per matched pair and agent)."
    )
    backends: dict[str, BackendInfo] = Field(
        default_factory=dict,
        description="Speech backends of the run by role (`tts`, and `asr` when one ran).",
    )
    budget_stop: BudgetStop | None = Field(
        default=None,
        description="Why the campaign's budget stopped the run before every pair was placed; None when it did not (or a resume finished it).",
    )


class ArtifactRef(Frozen):
    """L for one call of the pair: where its logs are, and the hash that shows they are untouched."""

    episode_id: str = Field(description="Id of the call.", examples=["eb62432d566c48fb"])
    events: str = Field(
        description="Path of the call's events.jsonl, relative to the run folder.",
        examples=["episodes/eb62432d566c48fb/events.jsonl"],
    )
    events_sha256: str = Field(
        description="SHA-256 (hex) of the events.jsonl bytes, as the episode record gives it.",
        examples=["6a1986ad7a046d1b1772286f72e77294f5a818f6ee65feaa8fed0f85a6cdd8dc"],
    )
    audio: str | None = Field(
        default=None,
        description="Path of the call recording, relative to the run folder; None when there is none.",
        examples=["episodes/eb62432d566c48fb/call.wav"],
    )
    status: Status = Field(description="How the call ended, as analysed (see EpisodeOutcome.status).")
    upgraded_from_schema: int | None = Field(
        default=None,
        description="Schema version of an older record that analysis read as the current schema writes it; None when read as written.",
        examples=[1],
    )


class ClaimTemplate(Frozen):
    """T: the comparison, the metric families it is analysed on and the claim it supports alone.

    A single matched pair supports at most a construct-validation claim (METHOD section 6);
    paired-disparity and architecture-comparison claims are made over many pairs, per cell, in
    disposition.json."""

    comparison: str = Field(
        default="condition a minus condition b",
        description="Direction of every paired difference reported for the instance.",
    )
    plan_sha256: str = Field(
        description="SHA-256 (hex) of the frozen analysis plan that fixes the metrics, gates and thresholds.",
        examples=["1f9a03a2c52f004df2391ed841eb406929ff799a78759108bc5ed611002e6192"],
    )
    metric_families: tuple[str, ...] = Field(
        description="Metric families the plan analyses the instance on.",
        examples=[["terminal_outcome", "path_burden", "tool_behaviour", "speech_behaviour", "safety_events"]],
    )
    supported_families: tuple[str, ...] = Field(
        description="Those of `metric_families` whose every guarding gate passed for the pair; empty when the instance is diagnostics only.",
        examples=[["terminal_outcome", "tool_behaviour"]],
    )
    claim: Literal["diagnostics_only", "construct_validation"] = Field(
        description="`construct_validation` when the pair is in the deltas and some family passed every gate guarding it; otherwise `diagnostics_only`."
    )
    limited_by: tuple[str, ...] = Field(
        default=(),
        description="Gates that did not pass for the pair (gate=verdict), or why it left the deltas; empty when nothing limited it.",
        examples=[["persona_perceptibility=not-evaluable"]],
    )


class AuditInstance(Frozen):
    """A = (S, C, R, L, T) for one matched pair of one agent: one line of audit_instances.jsonl."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Version of the audit instance format.")
    instance_id: str = Field(
        description="Id of the audit instance: a hash of the run id, pair id and agent.",
        examples=["4be0c8a1d2f37e65"],
    )
    run_id: str = Field(
        description="Id of the run whose folder the artifact paths are relative to.",
        examples=["demo-20261201T205301Z-3fa2c1"],
    )
    scenario_id: str = Field(description="Scenario both calls ran (S).", examples=["refund_duplicate_charge"])
    scenario_version: int = Field(description="Version of the scenario (S), from its file.")
    scenario_sha256: str = Field(
        description="SHA-256 (hex) of the scenario's canonical JSON, as locked (S).",
        examples=["a94d49770d1e1526c0550a617cac45193b6618564aa2d8d750af98605ce183d2"],
    )
    pair_id: str = Field(description="Id of the matched pair.", examples=["c64fac3775c6"])
    condition_a: CallerCondition = Field(description="Caller condition of side a (C).")
    condition_b: CallerCondition = Field(description="Caller condition of side b (C).")
    contrast: tuple[Axis, ...] = Field(
        description="Persona axes on which the two conditions differ; empty for an A/A pair.",
        examples=[["accent"]],
    )
    voice_index: int = Field(
        description="Which realisation of the voice profile both sides used (0-based): the voice of the cell (C)."
    )
    replicate: int = Field(description="Replicate number of the pair (0-based).")
    run_batch: str = Field(description="The campaign's batch label both calls ran in.", examples=["b1"])
    architecture: Architecture | None = Field(
        description="Architecture of the agent (R); None when not declared.", examples=["casc"]
    )
    agent: str = Field(description="Name of the agent both calls reached.", examples=["reference"])
    artifact_a: ArtifactRef = Field(description="Logs of side a's call (L).")
    artifact_b: ArtifactRef = Field(description="Logs of side b's call (L).")
    claim_template: ClaimTemplate = Field(
        description="The comparison, metric families and claim the instance supports (T)."
    )
