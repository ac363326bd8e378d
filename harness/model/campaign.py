"""Campaign: scenarios x matched pairs x voices x replicates x agents, with pacing and backends."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from personas._model import AXES, Axis, CallerCondition
from scenarios._base import Frozen, sha256_of

Pacing = Literal["realtime", "accelerated"]
FactsDisclosure = Literal["full", "ids", "none"]
"""What of a call's facts the agent is sent: all of them, only the account and policy ids, or nothing."""
Architecture = Literal["nat", "casc", "hyb"]


class AgentSpec(Frozen):
    """Which agent to call and how: a registered adapter name (entry point), or `module:attr`."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    adapter: str = Field(min_length=1)
    url: str | None = None
    architecture: Architecture | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class BackendSpec(Frozen):
    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)


class ChannelSpec(Frozen):
    telephone: bool = True
    snr_db: float | None = Field(default=None, ge=-10, le=80)
    packet_loss: float = Field(default=0.0, ge=0.0, le=0.5)


class Timeouts(Frozen):
    """The harness's last-resort guards against a stuck harness; they must exceed the caller's
    patience, which is what ends a call with a silent agent (as `agent_unresponsive`)."""

    connect_s: float = Field(default=10.0, gt=0)
    turn_s: float = Field(default=120.0, gt=0)
    call_s: float = Field(default=600.0, gt=0)


class Interruptions(Frozen):
    """A declared caller behaviour: the caller barges in on agent turns while the agent speaks.

    Real-time pacing with a streaming agent only. The caller starts its fixed interruption line
    (`reason`: impatience or correction) `at_ms` into the agent's turn, or at `at_fraction` of the
    audio the agent has sent for it, on the agent turns listed in `turns` (0 is the greeting; empty:
    every turn after the greeting). Both calls of a pair interrupt at the same points whenever the
    agent's turns are the same.
    """

    at_ms: int | None = Field(default=None, ge=0, le=60_000)
    at_fraction: float | None = Field(default=None, gt=0, lt=1)
    reason: Literal["impatience", "correction"] = "impatience"
    turns: tuple[int, ...] = ()

    @model_validator(mode="after")
    def _one_point(self) -> Interruptions:
        if (self.at_ms is None) == (self.at_fraction is None):
            raise ValueError("interruptions need exactly one of at_ms (ms into the turn) or at_fraction (of the turn)")
        if any(t < 0 for t in self.turns):
            raise ValueError("interruptions.turns are agent turn numbers (0 is the greeting)")
        return self

    def applies_to(self, turn: int) -> bool:
        return turn in self.turns if self.turns else turn > 0


PATIENCE_MARGIN_S = 5.0
"""How much longer than the caller's patience the harness timeouts must be: the longest patience
line (a request for a human at a slow speaking rate) fits in it."""


class Patience(Frozen):
    """How long the caller bears an agent's silence, the same for both calls of a pair.

    After `prompt_after_s` of silence the caller says "Hello? Are you still there?"; after
    `prompts_before_human` unanswered prompts it asks for a human; once the agent has been silent
    for `hang_up_after_s` in all, it hangs up and the call ends as `agent_unresponsive`. The
    defaults are a patient real caller's.
    """

    prompt_after_s: float = Field(default=8.0, gt=0, le=600)
    prompts_before_human: int = Field(default=2, ge=0, le=20)
    hang_up_after_s: float = Field(default=45.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _ordered(self) -> Patience:
        if self.prompt_after_s > self.hang_up_after_s:
            raise ValueError(
                f"patience.prompt_after_s ({self.prompt_after_s:g}) exceeds patience.hang_up_after_s "
                f"({self.hang_up_after_s:g}); the caller would hang up before ever prompting"
            )
        return self


class CellVoicing(Frozen):
    """Cells voiced by another TTS backend than the campaign's `tts` (recorded actors for some
    cells, say): every caller condition whose levels include all of `when`; the first entry that
    matches wins."""

    when: dict[str, str] = Field(min_length=1)
    tts: BackendSpec

    @field_validator("when")
    @classmethod
    def _axes(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(v) - set(AXES))
        if unknown:
            raise ValueError(f"unknown persona axis {', '.join(unknown)} (axes: {', '.join(AXES)})")
        return v

    def matches(self, condition: CallerCondition) -> bool:
        return all(getattr(condition, axis) == level for axis, level in self.when.items())


class PairSpec(Frozen):
    """A planned contrast: shared `base` levels, then the levels that make condition a and b.

    `mixed_backends`: accept that a and b are voiced by different TTS backends (`cell_tts`), which
    confounds the contrast with the engines; refused unless declared here.
    """

    name: str | None = None
    contrast: tuple[Axis, ...]
    base: dict[str, str] = Field(default_factory=dict)
    a: dict[str, str] = Field(default_factory=dict)
    b: dict[str, str] = Field(default_factory=dict)
    scenarios: tuple[str, ...] | None = None
    mixed_backends: bool = False

    @field_validator("contrast")
    @classmethod
    def _unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError("contrast lists an axis twice")
        return v


class ModelReaderSpec(Frozen):
    """A model-based reader of agent turns: an OpenAI-compatible endpoint, or a local packaged model.

    The key is never in the campaign: `api_key_env` names the environment variable that holds it.
    """

    backend: Literal["openai", "local"] = "openai"
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]{2,}$")
    model_path: str | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    structured: Literal["json_schema", "json_object", "none"] = "json_schema"
    seed: int = 0
    max_tokens: int = Field(default=96, ge=8, le=1024)
    timeout_s: float = Field(default=30.0, gt=0)
    threads: int | None = Field(default=None, ge=1, le=64)

    @model_validator(mode="after")
    def _where(self) -> ModelReaderSpec:
        if self.backend == "openai" and not self.base_url:
            raise ValueError("an openai reader needs base_url (e.g. http://127.0.0.1:8080/v1)")
        if self.model_path is not None and self.sha256 is None:
            raise ValueError("a local model_path needs its sha256, checked when the model loads")
        return self


class ReaderSpec(Frozen):
    """Which reader the caller acts on; with `model` set, the other one reads every turn beside it.

    `measure_asr`: also run the caller's ASR (`Campaign.asr`, the caller's ears, separate from any
    agent's recogniser) on turns whose words the agent gives, logged as `asr_check`, so its word
    error rate on agent voices is reported.
    """

    model: ModelReaderSpec | None = None
    acting: Literal["rules", "model"] = "rules"
    measure_asr: bool = False

    @model_validator(mode="after")
    def _acting(self) -> ReaderSpec:
        if self.acting == "model" and self.model is None:
            raise ValueError("acting: model needs a model reader (reader.model)")
        return self


class Campaign(Frozen):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    seed: int = 0
    batch: str = Field(default="b1", pattern=r"^[A-Za-z0-9_.-]+$")
    scenario_dir: str | None = None
    catalogue: str | None = None
    scenarios: tuple[str, ...] = Field(min_length=1)
    agents: tuple[AgentSpec, ...] = Field(min_length=1)
    pairs: tuple[PairSpec, ...] = Field(min_length=1)
    voices: int = Field(default=3, ge=1)
    replicates: int = Field(default=1, ge=1)
    concurrency: int = Field(default=4, ge=1, le=4096)
    pacing: Pacing = "accelerated"
    tts: BackendSpec = BackendSpec(name="espeak")
    cell_tts: tuple[CellVoicing, ...] = ()
    asr: BackendSpec = BackendSpec(name="faster-whisper")
    channel: ChannelSpec = ChannelSpec()
    timeouts: Timeouts = Timeouts()
    patience: Patience = Patience()
    interruptions: Interruptions | None = None
    retries: int = Field(default=0, ge=0, le=5)
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
    reader: ReaderSpec = ReaderSpec()

    @model_validator(mode="after")
    def _interruptions_in_real_time(self) -> Campaign:
        if self.interruptions is not None and self.pacing != "realtime":
            raise ValueError(
                f"interruptions need pacing: realtime (this campaign is {self.pacing}): a caller can only "
                "talk over an agent that is speaking in real time; set pacing: realtime or remove interruptions"
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
                raise ValueError(
                    f"timeouts.{name} ({limit:g} s) must exceed patience.hang_up_after_s "
                    f"({self.patience.hang_up_after_s:g} s) by more than {PATIENCE_MARGIN_S:g} s: the caller's "
                    f"patience ends a call with a silent agent, the timeouts only guard a stuck harness; "
                    f"raise timeouts.{name} above {need:g} or lower patience.hang_up_after_s"
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
            raise ValueError(f"agent name {', '.join(dupes)} used twice")
        return v

    @cached_property
    def sha256(self) -> str:
        return sha256_of(self)


__all__ = ["AXES", "AgentSpec", "Architecture", "BackendSpec", "Campaign", "CellVoicing", "ChannelSpec", "FactsDisclosure", "Interruptions", "ModelReaderSpec", "Pacing", "PairSpec", "Patience",
           "ReaderSpec", "Timeouts"]
