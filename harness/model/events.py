"""The event log of one call: a tagged union, every event stamped with `t_ms` on the episode clock.

The episode clock starts at 0 when the call connects. In real-time pacing it is wall time; in
accelerated pacing it is a virtual clock advanced by audio durations and measured agent compute.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from scenarios.base import Frozen

FailureKind = Literal[
    "connect_failed",
    "timeout_turn",
    "timeout_call",
    "disconnect",
    "malformed_frame",
    "protocol_error",
    "http_error",
    "agent_error",
    "audio_error",
    "caller_error",
    "harness_error",
    "cancelled",
]
FAILURE_KINDS: tuple[str, ...] = FailureKind.__args__  # type: ignore[attr-defined]

FailureSide = Literal["agent", "harness", "caller_voice"]
FAILURE_SIDE: dict[str, FailureSide] = {
    "connect_failed": "agent",
    "timeout_turn": "harness",
    "timeout_call": "harness",
    "disconnect": "agent",
    "malformed_frame": "agent",
    "protocol_error": "agent",
    "http_error": "agent",
    "agent_error": "agent",
    "audio_error": "caller_voice",
    "caller_error": "caller_voice",
    "harness_error": "harness",
    "cancelled": "harness",
}
"""Which side failed. An agent-side failure is the agent not serving the caller: an outcome of the
call (status `completed`, terminal outcome `unresolved`, a `NON_SERVICE_FLAGS` flag). A harness or
caller-voice failure is missing data (status `failed`). Turn and call timeouts are the harness's
last-resort guards: the caller's patience ends a call with a silent agent long before them, so a
timeout that fires means the harness itself got stuck."""

NonServiceFlag = Literal[
    "agent_unresponsive",
    "agent_hung_up",
    "agent_disconnected",
    "agent_protocol_error",
    "agent_error_event",
    "agent_unreachable",
]
NON_SERVICE_FLAGS: tuple[str, ...] = NonServiceFlag.__args__  # type: ignore[attr-defined]
"""Outcome flags of a call the agent did not serve; a call carrying one is never acceptable."""

NON_SERVICE_FLAG: dict[str, NonServiceFlag] = {
    "connect_failed": "agent_unreachable",
    "disconnect": "agent_disconnected",
    "malformed_frame": "agent_protocol_error",
    "protocol_error": "agent_protocol_error",
    "http_error": "agent_protocol_error",
    "agent_error": "agent_error_event",
}
"""The non-service flag of each agent-side failure kind."""


def failure_side(kind: str) -> FailureSide:
    """The side a failure kind belongs to; an unknown kind (a newer writer) counts as the harness's."""
    return FAILURE_SIDE.get(kind, "harness")


def non_service_flag(kind: str) -> NonServiceFlag | None:
    """The outcome flag an agent-side failure kind becomes; None for harness and caller-voice kinds."""
    return NON_SERVICE_FLAG.get(kind)

Classification = Literal[
    "challenge",
    "repair_request",
    "question",
    "offer",
    "confirmation",
    "denial",
    "handoff",
    "hold",
    "closing",
    "pressure",
    "silence",
    "other",
]
CLASSIFICATIONS: tuple[str, ...] = Classification.__args__  # type: ignore[attr-defined]


class _Event(Frozen):
    t_ms: int = Field(ge=0)


class CallStarted(_Event):
    """`call_id` is the id the agent was given (Twilio callSid, the call JSON's `call_id`);
    `agent_session_id` the id the agent side gave the session (Realtime session id, HTTP/WS
    `session_id`, Twilio streamSid): the keys that join a call with the vendor's own logs."""

    type: Literal["call_started"] = "call_started"
    pacing: Literal["realtime", "accelerated"]
    protocol: str
    call_id: str | None = None
    agent_session_id: str | None = None


class FactsProvisioned(_Event):
    """The facts of the call (`sha256`, what its tools serve) and what of them the agent was sent
    (`disclosure`, the top-level `disclosed` fields, `disclosed_sha256` of exactly that); the
    fact-invariance gate compares these hashes across a pair."""

    type: Literal["facts_provisioned"] = "facts_provisioned"
    sha256: str
    tools: tuple[str, ...] = ()
    reported_by_agent: bool = False
    disclosure: Literal["full", "ids", "none"] | None = None
    disclosed: tuple[str, ...] = ()
    disclosed_sha256: str | None = None


class CallerUtteranceStart(_Event):
    type: Literal["caller_utterance_start"] = "caller_utterance_start"
    turn: int = Field(ge=0)
    kind: Literal[
        "anchor", "challenge_answer", "repeat", "rephrase", "human_request", "nudge", "patience_prompt", "interruption"
    ]
    anchor_id: str | None = None
    text: str
    duration_ms: int = Field(ge=0)
    voice: dict[str, Any] | None = None
    """What made the audio: backend, version and the parameters it applied (a recording's hash and
    original level, a neural model's hash and licence)."""


class CallerUtteranceEnd(_Event):
    type: Literal["caller_utterance_end"] = "caller_utterance_end"
    turn: int = Field(ge=0)
    truncated: bool = False


class CallerDecision(_Event):
    """The caller policy's reading of an agent turn and what it did about it; burden metrics rest on it."""

    type: Literal["caller_decision"] = "caller_decision"
    turn: int = Field(ge=0)
    heard: str
    classification: Classification
    action: str
    reason: str
    challenge_fact: str | None = None
    tags: tuple[str, ...] = ()
    acts: tuple[str, ...] = ()
    """Every dialogue act the acting reader found in the turn, primary first (`classification` is
    the primary one in the coarser logged vocabulary; `tags` are the other acts' rules)."""


class CallerReading(_Event):
    """The other reader's reading of the turn just decided (logged only when a second reader runs),
    so the two observers' disagreement is visible per turn; `error` when it could not read."""

    type: Literal["caller_reading"] = "caller_reading"
    turn: int = Field(ge=0)
    reader: str
    acting_reader: str
    classification: Classification | None = None
    acts: tuple[str, ...] = ()
    rule: str | None = None
    challenge_fact: str | None = None
    error: str | None = None
    elapsed_ms: float = Field(default=0.0, ge=0)


class AsrCheck(_Event):
    """The caller's ASR on a turn whose words the agent also gave (`agent_transcript`, source agent):
    measures the caller's ears; never read by the caller policy."""

    type: Literal["asr_check"] = "asr_check"
    turn: int = Field(ge=0)
    text: str
    confidence: float | None = None


class AgentSpeechStart(_Event):
    type: Literal["agent_speech_start"] = "agent_speech_start"
    turn: int = Field(ge=0)


class AgentSpeechEnd(_Event):
    type: Literal["agent_speech_end"] = "agent_speech_end"
    turn: int = Field(ge=0)
    duration_ms: int = Field(ge=0)
    interrupted: bool = False


class AgentAudio(_Event):
    type: Literal["agent_audio"] = "agent_audio"
    duration_ms: float = Field(ge=0)
    n_bytes: int = Field(ge=0)
    encoding: Literal["pcm16", "mulaw"]
    sample_rate: int = Field(gt=0)


class AgentTranscript(_Event):
    """Words the agent said: from the agent itself, or from the harness's own ASR of the agent audio."""

    type: Literal["agent_transcript"] = "agent_transcript"
    turn: int = Field(ge=0)
    text: str
    source: Literal["agent", "harness_asr"]
    confidence: float | None = None


class AgentHeard(_Event):
    """What the agent's own recogniser made of the caller (cascaded and hybrid agents expose it)."""

    type: Literal["agent_heard"] = "agent_heard"
    turn: int = Field(ge=0)
    text: str
    confidence: float | None = None


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    ok: bool
    result_keys: tuple[str, ...] = ()
    error: str | None = None


class StateTransition(_Event):
    type: Literal["state_transition"] = "state_transition"
    from_state: str
    to_state: str
    flags: tuple[str, ...] = ()


class EscalationRequested(_Event):
    """The caller asked for a human; Esc(e) runs from here to a handoff or a terminal refusal."""

    type: Literal["escalation_requested"] = "escalation_requested"
    turn: int = Field(ge=0)
    reason: Literal["scripted", "repairs", "stalled", "denial", "unresponsive"]


class Handoff(_Event):
    type: Literal["handoff"] = "handoff"
    status: Literal["confirmed", "refused"]
    source: Literal["tool", "agent_words", "agent_state"]


class BargeIn(_Event):
    """Someone started talking over the other. A planned caller interruption carries the agent turn,
    how much of it had played (`played_ms`) and the declared reason."""

    type: Literal["barge_in"] = "barge_in"
    by: Literal["caller", "agent"]
    turn: int | None = Field(default=None, ge=0)
    played_ms: int | None = Field(default=None, ge=0)
    reason: Literal["impatience", "correction"] | None = None


class AgentClear(_Event):
    """The agent dropped its own queued audio: a Twilio `clear`, or a Realtime cancel/truncation."""

    type: Literal["agent_clear"] = "agent_clear"
    source: Literal["twilio_clear", "response_cancel", "truncate"]
    dropped_ms: int = Field(ge=0)


class AgentYield(_Event):
    """How the agent reacted to a caller barge-in, measured on the recording's agent channel.

    `stop_latency_ms` runs from the barge-in to the start of the agent's first quiet stretch (400 ms)
    after it, so an agent that never yields shows the rest of its speech; `overlap_ms` is how long
    both talked at once; `cleared`: the agent dropped its queued audio (a clear or cancel)."""

    type: Literal["agent_yield"] = "agent_yield"
    turn: int = Field(ge=0)
    stop_latency_ms: int | None = Field(default=None, ge=0)
    overlap_ms: int = Field(ge=0)
    cleared: bool = False


class AgentSilence(_Event):
    """An agent turn with no words: the agent said nothing for `silence_ms` after the caller's turn.
    Not an agent turn; the caller's patience decides what follows."""

    type: Literal["agent_silence"] = "agent_silence"
    turn: int = Field(ge=0)
    silence_ms: int = Field(ge=0)


class CallerPatience(_Event):
    """A decision of the caller's patience: prompt the agent, ask for a human, or hang up.
    `silence_ms` is the agent's silence so far, `prompts` the unanswered prompts, `budget_ms` the
    whole patience of the caller with a silent agent."""

    type: Literal["caller_patience"] = "caller_patience"
    turn: int = Field(ge=0)
    action: Literal["prompt", "ask_human", "hang_up"]
    silence_ms: int = Field(ge=0)
    prompts: int = Field(ge=0)
    budget_ms: int = Field(ge=0)
    reason: str


class NonService(_Event):
    """The agent did not serve the caller: the call is an outcome (`unresolved` with flag `reason`),
    not missing data. `kind` is the agent-side failure behind it, when there was one."""

    type: Literal["non_service"] = "non_service"
    reason: NonServiceFlag
    kind: FailureKind | None = None
    message: str = ""


class Dtmf(_Event):
    type: Literal["dtmf"] = "dtmf"
    digit: str = Field(pattern=r"^[0-9*#A-D]$")


class Mark(_Event):
    type: Literal["mark"] = "mark"
    name: str
    action: Literal["received", "echoed", "cleared"]


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    kind: FailureKind
    message: str
    fatal: bool = True


class HangUp(_Event):
    type: Literal["hang_up"] = "hang_up"
    by: Literal["caller", "agent", "harness"]
    reason: str


Event = Annotated[
    CallStarted
    | FactsProvisioned
    | CallerUtteranceStart
    | CallerUtteranceEnd
    | CallerDecision
    | CallerReading
    | AsrCheck
    | AgentSpeechStart
    | AgentSpeechEnd
    | AgentAudio
    | AgentTranscript
    | AgentHeard
    | ToolCall
    | ToolResult
    | StateTransition
    | EscalationRequested
    | Handoff
    | BargeIn
    | AgentClear
    | AgentYield
    | AgentSilence
    | CallerPatience
    | NonService
    | Dtmf
    | Mark
    | ErrorEvent
    | HangUp,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: tuple[str, ...] = tuple(
    cls.model_fields["type"].default
    for cls in (
        CallStarted,
        FactsProvisioned,
        CallerUtteranceStart,
        CallerUtteranceEnd,
        CallerDecision,
        CallerReading,
        AsrCheck,
        AgentSpeechStart,
        AgentSpeechEnd,
        AgentAudio,
        AgentTranscript,
        AgentHeard,
        ToolCall,
        ToolResult,
        StateTransition,
        EscalationRequested,
        Handoff,
        BargeIn,
        AgentClear,
        AgentYield,
        AgentSilence,
        CallerPatience,
        NonService,
        Dtmf,
        Mark,
        ErrorEvent,
        HangUp,
    )
)


def parse_event(data: dict[str, Any] | str | bytes) -> Event:
    if isinstance(data, str | bytes):
        return EVENT_ADAPTER.validate_json(data)
    return EVENT_ADAPTER.validate_python(data)


def check_monotonic(events: list[Event]) -> int | None:
    """Index of the first event whose t_ms goes backwards, or None when the clock is monotonic."""
    last = -1
    for i, ev in enumerate(events):
        if ev.t_ms < last:
            return i
        last = ev.t_ms
    return None
