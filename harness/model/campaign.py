"""Campaign: scenarios x matched pairs x voices x replicates x agents, with pacing and backends."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from voice_audit.harness.model.usage import Budget, PriceTable
from voice_audit.personas import AXES, Axis, CallerCondition
from voice_audit.scenarios.base import Frozen, sha256_of
from voice_audit.scenarios.vocabulary import PositionedValueError

Pacing = Literal["realtime", "accelerated"]
FactsDisclosure = Literal["full", "ids", "none"]
"""What of a call's facts the agent is sent: all of them, only the account and policy ids, or nothing."""
Architecture = Literal["nat", "casc", "hyb"]


class AgentSpec(Frozen):
    """Which agent to call and how: a registered adapter name (entry point), or `module:attr`."""

    name: str = Field(
        pattern=r"^[a-z][a-z0-9_-]*$",
        description="Agent name in results (lower case, digits, - and _).",
    )
    adapter: str = Field(
        min_length=1,
        description="A registered adapter (hybrid, http, ws, twilio, realtime, ...) or package.module:attr of a factory taking this spec.",
    )
    url: str | None = Field(
        default=None,
        description="Where a protocol adapter reaches the agent (http://, ws://).",
    )
    architecture: Architecture | None = Field(
        default=None,
        description="nat (speech to speech), casc (ASR, text model, TTS) or hyb; recorded per call, taken from the adapter when unset.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Adapter options (e.g. tool_trace / transcripts: true for an agent that cannot declare what it exposes).",
    )
    max_concurrent_calls: int | None = Field(
        default=None,
        ge=1,
        description="The vendor's limit on calls in flight to this agent at once; unset: only the campaign's concurrency.",
    )
    calls_per_minute: float | None = Field(
        default=None,
        gt=0,
        description="The vendor's limit on new calls (sessions) per minute to this agent; unset: none.",
    )


class BackendSpec(Frozen):
    name: str = Field(
        min_length=1,
        description="Registered backend name (espeak, neural, recorded, faster-whisper, ...) or package.module:attr.",
    )
    options: dict[str, Any] = Field(default_factory=dict, description="Backend options.")


class ChannelSpec(Frozen):
    telephone: bool = Field(
        default=True,
        description="Band-limit and resample caller audio as a telephone line does (8 kHz).",
    )
    snr_db: float | None = Field(
        default=None,
        ge=-10,
        le=80,
        description="Add noise at this signal-to-noise ratio in dB; unset: none.",
    )
    packet_loss: float = Field(
        default=0.0,
        ge=0.0,
        le=0.5,
        description="Fraction of 20 ms caller frames dropped, as on a lossy network.",
    )


class Timeouts(Frozen):
    """The harness's last-resort guards against a stuck harness; they must exceed the caller's
    patience, which is what ends a call with a silent agent (as `agent_unresponsive`)."""

    connect_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds to open a session with the agent before the call fails as connect_failed.",
    )
    turn_s: float = Field(
        default=120.0,
        gt=0,
        description="Seconds an agent turn may take before the harness gives up (must exceed the caller's patience).",
    )
    call_s: float = Field(
        default=600.0,
        gt=0,
        description="Seconds a whole call may take (must exceed the caller's patience).",
    )


class Interruptions(Frozen):
    """A declared caller behaviour: the caller barges in on agent turns while the agent speaks.

    Real-time pacing with a streaming agent only. The caller starts its fixed interruption line
    (`reason`: impatience or correction) `at_ms` into the agent's turn, or at `at_fraction` of the
    audio the agent has sent for it, on the agent turns listed in `turns` (0 is the greeting; empty:
    every turn after the greeting). Both calls of a pair interrupt at the same points whenever the
    agent's turns are the same.
    """

    at_ms: int | None = Field(
        default=None,
        ge=0,
        le=60_000,
        description="Barge in this many ms into the agent's turn.",
    )
    at_fraction: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Barge in at this fraction of the audio the agent has sent for the turn.",
    )
    reason: Literal["impatience", "correction"] = Field(
        default="impatience",
        description="The caller's interruption line: impatience or correction.",
    )
    turns: tuple[int, ...] = Field(
        default=(),
        description="Agent turns to interrupt (0 is the greeting); empty: every turn after the greeting.",
    )

    @model_validator(mode="after")
    def _one_point(self) -> Interruptions:
        if (self.at_ms is None) == (self.at_fraction is None):
            raise PositionedValueError(
                () if self.at_ms is None else ("at_fraction",),
                "interruptions need exactly one of at_ms (ms into the turn) or at_fraction (of the turn)",
                fix="keep one of at_ms and at_fraction",
            )
        negative = [i for i, t in enumerate(self.turns) if t < 0]
        if negative:
            raise PositionedValueError(
                ("turns", negative[0]),
                "interruptions.turns are agent turn numbers (0 is the greeting)",
                fix="use turn numbers of 0 or more",
            )
        return self

    def applies_to(self, turn: int) -> bool:
        return turn in self.turns if self.turns else turn > 0


OPERATIONAL_FIELDS: dict[str, Any] = {
    "prices": True,
    "budget": True,
    "stimulus": True,
    "agents": {"__all__": {"max_concurrent_calls", "calls_per_minute"}},
}
"""Campaign fields outside its hash: they change what a run costs or how fast it calls, not the calls."""

PATIENCE_MARGIN_S = 5.0
"""How much longer than the caller's patience the harness timeouts must be: the longest patience
line (a request for a human at a slow speaking rate) fits in it."""


class Patience(Frozen):
    """How long the caller bears an agent's silence, the same for both calls of a pair.

    After `prompt_after_s` of silence the caller says "Hello? Are you still there?"; after
    `prompts_before_human` unanswered prompts it asks for a human; once the agent has been silent
    for `hang_up_after_s` in all, it hangs up and the call ends as `agent_unresponsive`. A repair
    loop wears it out too: after `repairs_before_human` consecutive unproductive exchanges it asks
    for a human, after `repairs_after_human` more it hangs up (reason `repair_loop`). The
    defaults are a patient real caller's (docs/safety-events.md gives the reasoning).
    """

    prompt_after_s: float = Field(
        default=8.0,
        gt=0,
        le=600,
        description="Seconds of agent silence before the caller asks 'Hello? Are you still there?'.",
    )
    prompts_before_human: int = Field(
        default=2,
        ge=0,
        le=20,
        description="Unanswered prompts before the caller asks for a human.",
    )
    hang_up_after_s: float = Field(
        default=45.0,
        gt=0,
        le=3600,
        description="Seconds of agent silence in all before the caller hangs up (agent_unresponsive).",
    )
    repairs_before_human: int = Field(
        default=3,
        ge=1,
        le=50,
        description=(
            "Consecutive unproductive exchanges (the agent asks to repeat, asks again for the same fact, "
            "or answers without moving the call forward) before the caller asks for a human."
        ),
    )
    repairs_after_human: int = Field(
        default=2,
        ge=1,
        le=50,
        description="Further unproductive exchanges, after asking for a human, before the caller hangs up (repair_loop).",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Patience:
        if self.prompt_after_s > self.hang_up_after_s:
            raise PositionedValueError(
                ("prompt_after_s",),
                f"patience.prompt_after_s ({self.prompt_after_s:g}) exceeds patience.hang_up_after_s "
                f"({self.hang_up_after_s:g}); the caller would hang up before ever prompting",
                fix=f"set prompt_after_s to at most {self.hang_up_after_s:g} or raise hang_up_after_s",
            )
        return self


class CellVoicing(Frozen):
    """Cells voiced by another TTS backend than the campaign's `tts` (recorded actors for some
    cells, say): every caller condition whose levels include all of `when`; the first entry that
    matches wins."""

    when: dict[str, str] = Field(
        min_length=1,
        description="Persona levels a condition must have (axis -> level) to be voiced by this backend.",
    )
    tts: BackendSpec = Field(description="The TTS backend for those cells.")

    @field_validator("when")
    @classmethod
    def _axes(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(v) - set(AXES))
        if unknown:
            raise PositionedValueError(
                (unknown[0],),
                f"unknown persona axis {', '.join(unknown)} (axes: {', '.join(AXES)})",
                fix=f"use one of {', '.join(AXES)}",
            )
        return v

    def matches(self, condition: CallerCondition) -> bool:
        return all(getattr(condition, axis) == level for axis, level in self.when.items())


class PairSpec(Frozen):
    """A planned contrast: shared `base` levels, then the levels that make condition a and b.

    `mixed_backends`: accept that a and b are voiced by different TTS backends (`cell_tts`), which
    confounds the contrast with the engines; refused unless declared here.
    """

    name: str | None = Field(default=None, description="Name of the contrast in reports.")
    contrast: tuple[Axis, ...] = Field(
        description="The persona axes on which a and b differ; every other axis is shared.",
    )
    base: dict[str, str] = Field(
        default_factory=dict,
        description="Levels shared by both calls (axis -> level).",
    )
    a: dict[str, str] = Field(default_factory=dict, description="Levels of condition a on the contrast axes.")
    b: dict[str, str] = Field(default_factory=dict, description="Levels of condition b on the contrast axes.")
    scenarios: tuple[str, ...] | None = Field(
        default=None,
        description="Scenarios this pair runs on; unset: every campaign scenario.",
    )
    mixed_backends: bool = Field(
        default=False,
        description="Accept a and b voiced by different TTS backends (confounds the contrast with the engines).",
    )
    agents: tuple[str, ...] | None = Field(
        default=None,
        min_length=1,
        description="Names of the campaign agents this pair runs against; unset: every agent. "
        "Lets a slow agent (a language model) get a smaller cell than the others.",
    )
    replicates: int | None = Field(
        default=None,
        ge=1,
        description="Times this pair is called again with a new seed; unset: the campaign's replicates.",
    )
    voices: int | None = Field(
        default=None,
        ge=1,
        description="Voices per cell of this pair (different speakers of each condition); unset: the campaign's "
        "voices. Lets a contrast with three speakers per side sit beside one whose backend has one.",
    )

    @field_validator("contrast")
    @classmethod
    def _unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        again = [i for i, axis in enumerate(v) if axis in v[:i]]
        if again:
            raise PositionedValueError(
                (again[0],), "contrast lists an axis twice", fix=f"list '{v[again[0]]}' once"
            )
        return v


class ModelReaderSpec(Frozen):
    """A model-based reader of agent turns: an OpenAI-compatible endpoint, or a local packaged model.

    The key is never in the campaign: `api_key_env` names the environment variable that holds it.
    """

    backend: Literal["openai", "local"] = Field(
        default="openai",
        description="openai (an OpenAI-compatible endpoint) or local (a packaged model in process).",
    )
    model: str = Field(min_length=1, description="Model name at the endpoint, or the packaged model's name.")
    base_url: str | None = Field(
        default=None,
        description="Endpoint base URL for the openai backend, e.g. http://127.0.0.1:8080/v1.",
    )
    api_key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Z_][A-Z0-9_]{2,}$",
        description="Environment variable holding the endpoint's key (the key itself is never in the campaign).",
    )
    model_path: str | None = Field(default=None, description="Path of a local model file (needs sha256).")
    sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="sha256 of model_path, checked when the model loads.",
        examples=["0f3a9c1be4d27785a6e0c9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1"],
    )
    structured: Literal["json_schema", "json_object", "none"] = Field(
        default="json_schema",
        description="How answers are constrained: json_schema, json_object or none.",
    )
    seed: int = Field(default=0, description="Sampling seed sent with every request.")
    max_tokens: int = Field(
        default=96,
        ge=8,
        le=1024,
        description="Upper bound on the answer's length in tokens.",
    )
    timeout_s: float = Field(default=30.0, gt=0, description="Seconds per request.")
    threads: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="CPU threads of a local model; unset: the backend's default.",
    )

    @model_validator(mode="after")
    def _where(self) -> ModelReaderSpec:
        if self.backend == "openai" and not self.base_url:
            raise PositionedValueError(
                ("backend",),
                "an openai reader needs base_url (e.g. http://127.0.0.1:8080/v1)",
                fix="add base_url: the server's OpenAI-compatible address, e.g. http://127.0.0.1:8080/v1",
            )
        if self.model_path is not None and self.sha256 is None:
            raise PositionedValueError(
                ("model_path",),
                "a local model_path needs its sha256, checked when the model loads",
                fix="add sha256: the model file's sha256 (sha256sum <file>)",
            )
        return self


class ReaderSpec(Frozen):
    """Which reader the caller acts on; with `model` set, the other one reads every turn beside it.

    `measure_asr`: also run the caller's ASR (`Campaign.asr`, the caller's ears, separate from any
    agent's recogniser) on turns whose words the agent gives, logged as `asr_check`, so its word
    error rate on agent voices is reported.
    """

    model: ModelReaderSpec | None = Field(
        default=None,
        description="A model-based reader of agent turns, run beside the rule reader.",
    )
    acting: Literal["rules", "model"] = Field(
        default="rules",
        description="Which reader's reading the caller acts on: rules or model.",
    )
    measure_asr: bool = Field(
        default=False,
        description="Also run the caller's ASR on turns whose words the agent gives, to measure its error rate.",
    )

    @model_validator(mode="after")
    def _acting(self) -> ReaderSpec:
        if self.acting == "model" and self.model is None:
            raise PositionedValueError(
                ("acting",),
                "acting: model needs a model reader (reader.model)",
                fix="add reader.model or set acting: rules",
            )
        return self


class StimulusSpec(Frozen):
    """How `voice-audit stimuli` and the pre-screen before `run` read the campaign's stimuli."""

    recogniser: BackendSpec = Field(
        default=BackendSpec(name="faster-whisper"),
        description="The reference recogniser, independent of the agents (default: the bundled Whisper tiny.en; "
        "any ASR backend, a bigger local model, or an OpenAI-compatible transcription endpoint).",
    )
    override: tuple[str, ...] = Field(
        default=(),
        description="Pair names whose failing stimuli are accepted: their calls are placed and every finding of "
        "their cells carries the stimulus failure and never ranks above a finding whose stimuli pass.",
    )
    reason: str = Field(default="", description="Why the override is declared (recorded with the run).")


DEFAULT_TTS = "flite"
"""The caller's voice of a campaign that names no `tts`."""
DEFAULT_NAME = "campaign"


class Campaign(Frozen):
    name: str = Field(
        default=DEFAULT_NAME,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="Campaign name (letters, digits, _ . -). Unset: the campaign file's name without its "
        "extension (other characters become '-').",
    )
    description: str = Field(default="", description="What the campaign is for.")
    seed: int = Field(
        default=0,
        description="Seed of every random draw (voices, pair order, noise); the same seed plans the same calls.",
    )
    batch: str = Field(
        default="b1",
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="Batch label recorded on every call, for pooling runs.",
    )
    scenario_dir: str | None = Field(
        default=None,
        description="Folder of locked scenarios; unset: the bundled library.",
    )
    catalogue: str | None = Field(
        default=None,
        description="Persona catalogue file; unset: the bundled catalogue.",
    )
    scenarios: tuple[str, ...] = Field(min_length=1, description="Scenario ids to run (each must be locked).")
    agents: tuple[AgentSpec, ...] = Field(
        min_length=1,
        description="Agents to call; every pair runs against every agent unless the pair names its own.",
    )
    pairs: tuple[PairSpec, ...] = Field(min_length=1, description="The matched-pair contrasts.")
    voices: int = Field(
        default=3,
        ge=1,
        description="Voices per cell (different speakers of the same condition).",
    )
    replicates: int = Field(default=1, ge=1, description="Times each pair is called again with a new seed.")
    line_variants: int = Field(
        default=3,
        ge=1,
        le=20,
        description="Variants of each scripted line a disfluency level renders (its fillers and restarts), drawn "
        "once from the campaign seed. Replicate r of a pair says variant r mod line_variants on both calls, so a "
        "voice's line set grows with scenarios, not with replicates, and stays small enough to pilot and record.",
    )
    concurrency: int = Field(default=4, ge=1, le=4096, description="Calls in flight at once.")
    pacing: Pacing = Field(
        default="accelerated",
        description="accelerated (turn-based agents on a virtual clock) or realtime (audio in real time; streaming agents).",
    )
    tts: BackendSpec = Field(
        default=BackendSpec(name=DEFAULT_TTS),
        description="The caller's TTS backend. Unset: `flite`, recorded speakers whose voices pass the stimulus "
        "pre-screen (General American `rms`, `slt`, `kal16`; Scottish English `awb`); a cell of another accent, "
        "or a female Scottish caller, is refused when the campaign is planned: name a backend that renders it.",
    )
    cell_tts: tuple[CellVoicing, ...] = Field(
        default=(),
        description="Other TTS backends for some cells; the first matching entry wins.",
    )
    asr: BackendSpec = Field(
        default=BackendSpec(name="faster-whisper"),
        description="The caller's ASR backend (its ears on agent audio when the agent gives no words).",
    )
    channel: ChannelSpec = Field(default=ChannelSpec(), description="The line between caller and agent.")
    timeouts: Timeouts = Field(default=Timeouts(), description="Last-resort guards against a stuck harness.")
    patience: Patience = Field(
        default=Patience(),
        description="How long the caller bears an agent's silence.",
    )
    interruptions: Interruptions | None = Field(
        default=None,
        description="Caller barge-ins on agent turns (realtime pacing, streaming agents only).",
    )
    retries: int = Field(
        default=0,
        ge=0,
        le=5,
        description="Times a call that failed on the harness side is placed again.",
    )
    facts_disclosure: FactsDisclosure = Field(
        default="full",
        description=(
            "What of the scenario's facts reaches the agent. `full` (default): all of them, the call's ground "
            "truth a back office would hold, so an agent with no back office of its own can serve the call; "
            "`ids`: only the account and policy ids, for agents that look the rest up in their own systems; "
            "`none`: nothing. Protocol adapters send exactly this (HTTP/WS call JSON, Twilio customParameters, "
            "the Realtime instructions) and every call logs it in `facts_provisioned`; it is the same for both "
            "calls of a pair."
        ),
    )
    reader: ReaderSpec = Field(
        default=ReaderSpec(),
        description="Which reader of agent turns the caller acts on.",
    )
    prices: PriceTable | None = Field(
        default=None,
        description="Your prices per meter (call minutes, tokens, TTS characters ...), or the path of a YAML file "
        "holding them, relative to the campaign; no vendor price list is built in. Not part of the campaign's hash.",
    )
    stimulus: StimulusSpec = Field(
        default_factory=lambda: StimulusSpec(),
        description="The stimulus pilot run before any call: the reference recogniser, and the pairs whose failing "
        "stimuli are accepted (`override`). Not part of the campaign's hash: it decides whether calls are placed, "
        "never what they are.",
    )
    budget: Budget | None = Field(
        default=None,
        description="Limits (max_cost, max_calls, max_call_minutes): the run stops placing new pairs when the next "
        "pair could exceed one; `run --resume` continues under a raised budget. Not part of the campaign's hash.",
    )

    @model_validator(mode="after")
    def _cost_needs_prices(self) -> Campaign:
        if self.budget is not None and self.budget.max_cost is not None and self.prices is None:
            raise PositionedValueError(
                ("budget", "max_cost"),
                "budget.max_cost needs a price table (prices:) to compute a cost",
                fix="add a prices: table or remove budget.max_cost",
            )
        return self

    @model_validator(mode="after")
    def _interruptions_in_real_time(self) -> Campaign:
        if self.interruptions is not None and self.pacing != "realtime":
            raise PositionedValueError(
                ("interruptions",),
                f"interruptions need pacing: realtime (this campaign is {self.pacing}): a caller can only "
                "talk over an agent that is speaking in real time",
                fix="set pacing: realtime or remove interruptions",
            )
        return self

    @model_validator(mode="after")
    def _patience_first(self, info: ValidationInfo) -> Campaign:
        """The caller's patience must end a silent agent's call before any harness timeout does,
        with room for the line the caller may be saying when it runs out (`PATIENCE_MARGIN_S`).

        A rule for placing calls, not for reading them: a run folder written before the caller had
        patience (`context={"stored": True}`) is read as it was run."""
        if info.context and info.context.get("stored"):
            return self
        need = self.patience.hang_up_after_s + PATIENCE_MARGIN_S
        for name in ("turn_s", "call_s"):
            limit = getattr(self.timeouts, name)
            if limit <= need:
                raise PositionedValueError(
                    ("timeouts", name),
                    f"timeouts.{name} ({limit:g} s) must exceed patience.hang_up_after_s "
                    f"({self.patience.hang_up_after_s:g} s) by more than {PATIENCE_MARGIN_S:g} s: the caller's "
                    f"patience ends a call with a silent agent, the timeouts only guard a stuck harness",
                    fix=f"raise timeouts.{name} above {need:g} or lower patience.hang_up_after_s",
                )
        return self

    def tts_for(self, condition: CallerCondition) -> BackendSpec:
        """The backend that voices `condition`: its `cell_tts` entry, else the campaign's `tts`."""
        return next((v.tts for v in self.cell_tts if v.matches(condition)), self.tts)

    def tts_backends(self) -> tuple[BackendSpec, ...]:
        """Every backend the campaign may voice a caller with, the campaign's `tts` first."""
        specs = [self.tts, *(v.tts for v in self.cell_tts)]
        return tuple(s for i, s in enumerate(specs) if s not in specs[:i])

    @field_validator("agents")
    @classmethod
    def _unique_agents(cls, v: tuple[AgentSpec, ...]) -> tuple[AgentSpec, ...]:
        names = [a.name for a in v]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            again = next(i for i, n in enumerate(names) if n in names[:i])
            raise PositionedValueError(
                (again, "name"),
                f"agent name {', '.join(dupes)} used twice",
                fix="give each agent its own name",
            )
        return v

    @cached_property
    def sha256(self) -> str:
        """Hash of what decides the calls: prices, budget and the vendor's pacing limits are left
        out, so a resume may run under a raised budget or a slower pace (`OPERATIONAL_FIELDS`)."""
        return sha256_of(self.model_dump(mode="json", exclude=OPERATIONAL_FIELDS))


__all__ = [
    "AXES",
    "DEFAULT_NAME",
    "DEFAULT_TTS",
    "AgentSpec",
    "Architecture",
    "BackendSpec",
    "Campaign",
    "CellVoicing",
    "ChannelSpec",
    "FactsDisclosure",
    "Interruptions",
    "ModelReaderSpec",
    "Pacing",
    "PairSpec",
    "Patience",
    "ReaderSpec",
    "StimulusSpec",
    "Timeouts",
]
