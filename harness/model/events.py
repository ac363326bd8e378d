"""The event log of one call: a tagged union, every event stamped with `t_ms` on the episode clock.

The episode clock starts at 0 when the call connects. In real-time pacing it is wall time; in
accelerated pacing it is a virtual clock advanced by audio durations and measured agent compute.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from scenarios._base import Frozen

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
    type: Literal["call_started"] = "call_started"
    pacing: Literal["realtime", "accelerated"]
    protocol: str


class FactsProvisioned(_Event):
    """Exactly what the agent was given; the fact-invariance gate compares these hashes across a pair."""

    type: Literal["facts_provisioned"] = "facts_provisioned"
    sha256: str
    tools: tuple[str, ...] = ()
    reported_by_agent: bool = False


class CallerUtteranceStart(_Event):
    type: Literal["caller_utterance_start"] = "caller_utterance_start"
    turn: int = Field(ge=0)
    kind: Literal["anchor", "challenge_answer", "repeat", "rephrase", "human_request", "nudge"]
    anchor_id: str | None = None
    text: str
    duration_ms: int = Field(ge=0)


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
    reason: Literal["scripted", "repairs", "stalled", "denial"]


class Handoff(_Event):
    type: Literal["handoff"] = "handoff"
    status: Literal["confirmed", "refused"]
    source: Literal["tool", "agent_words", "agent_state"]


class BargeIn(_Event):
    type: Literal["barge_in"] = "barge_in"
    by: Literal["caller", "agent"]


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
