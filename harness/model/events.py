"""The event log of one call: a tagged union, every event stamped with `t_ms` on the episode clock.

The episode clock starts at 0 when the call connects. In real-time pacing it is wall time; in
accelerated pacing it is a virtual clock advanced by audio durations and measured agent compute.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

# The dialogue acts and the failure taxonomy live in `voice_audit.harness.model.dialogue_acts` and
# `voice_audit.harness.model.failures`; their names stay importable from here.
from voice_audit.harness.model.dialogue_acts import CLASSIFICATIONS as CLASSIFICATIONS
from voice_audit.harness.model.dialogue_acts import Classification as Classification
from voice_audit.harness.model.failures import FAILURE_KINDS as FAILURE_KINDS
from voice_audit.harness.model.failures import FAILURE_SIDE as FAILURE_SIDE
from voice_audit.harness.model.failures import NON_SERVICE_FLAG as NON_SERVICE_FLAG
from voice_audit.harness.model.failures import NON_SERVICE_FLAGS as NON_SERVICE_FLAGS
from voice_audit.harness.model.failures import FailureKind as FailureKind
from voice_audit.harness.model.failures import FailureSide as FailureSide
from voice_audit.harness.model.failures import NonServiceFlag as NonServiceFlag
from voice_audit.harness.model.failures import failure_side as failure_side
from voice_audit.harness.model.failures import non_service_flag as non_service_flag
from voice_audit.scenarios.base import Frozen

UtteranceKind = Literal[
    "anchor",
    "challenge_answer",
    "repeat",
    "rephrase",
    "human_request",
    "nudge",
    "patience_prompt",
    "interruption",
]
"""Why the caller said something; the caller policy decides it, the event log records it."""
EscalationReason = Literal["scripted", "repairs", "stalled", "denial", "unresponsive"]
"""Why the caller asked for a human."""


class _Event(Frozen):
    t_ms: int = Field(
        ge=0,
        description="When the event happened, in ms on the episode clock (0 at connect; wall time in realtime pacing, virtual in accelerated).",
    )


class CallStarted(_Event):
    """`call_id` is the id the agent was given (Twilio callSid, the call JSON's `call_id`);
    `agent_session_id` the id the agent side gave the session (Realtime session id, HTTP/WS
    `session_id`, Twilio streamSid): the keys that join a call with the vendor's own logs."""

    type: Literal["call_started"] = Field(
        default="call_started", description="Event type; always `call_started` for this event."
    )
    pacing: Literal["realtime", "accelerated"] = Field(
        description="`realtime`: the episode clock is wall time; `accelerated`: a virtual clock."
    )
    protocol: str = Field(
        description="How the harness talks to the agent.",
        examples=["in-process", "http", "ws", "twilio", "realtime"],
    )
    call_id: str | None = Field(
        default=None,
        description="Id the agent was given for the call (Twilio callSid, the call JSON's `call_id`); None when the protocol has none.",
        examples=["CA597d5725137b5b96c898910f050ba030"],
    )
    agent_session_id: str | None = Field(
        default=None,
        description="Id the agent side gave the session (Realtime session id, HTTP/WS `session_id`, Twilio streamSid); None when it gave none.",
        examples=["MZ18ad3ab5a668481ce02b83e7395059f0", "sess_8f2c"],
    )
    admitted_at: float | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="When the harness admitted the call under the agent's declared limits (`max_concurrent_calls`, `calls_per_minute`), in seconds since the Unix epoch: the wall clock of the run's grid of start times, the same on every worker and node. Absent when the agent declares no limits.",
        examples=[1796548226.8975],
    )


class FactsProvisioned(_Event):
    """The facts of the call (`sha256`, what its tools serve) and what of them the agent was sent
    (`disclosure`, the top-level `disclosed` fields, `disclosed_sha256` of exactly that); the
    fact-invariance gate compares these hashes across a pair."""

    type: Literal["facts_provisioned"] = Field(
        default="facts_provisioned", description="Event type; always `facts_provisioned` for this event."
    )
    sha256: str = Field(
        description="SHA-256 (hex) of the canonical JSON of the call's facts (what its tools serve).",
        examples=["185706a5cef05770d563d9ea6b3c43b500f77e7d1afa0fe09374e0e430b01391"],
    )
    tools: tuple[str, ...] = Field(
        default=(),
        description="Tools the agent was offered for the call.",
        examples=[["verify_identity", "crm_lookup", "issue_refund"]],
    )
    reported_by_agent: bool = Field(
        default=False,
        description="The agent itself reported the facts hash it was given (false: only the harness's record).",
    )
    disclosure: Literal["full", "ids", "none"] | None = Field(
        default=None,
        description="What of the facts the agent was sent: `full`, `ids` (identifiers only) or `none`; None when not recorded.",
    )
    disclosed: tuple[str, ...] = Field(
        default=(),
        description="Top-level facts fields the agent was sent.",
        examples=[["as_of", "account", "charge"]],
    )
    disclosed_sha256: str | None = Field(
        default=None,
        description="SHA-256 (hex) of exactly the facts sent to the agent; None when not recorded.",
        examples=["01db71a25c36ff90ab15aedeb61f9ab501036935a51a46c17e058d6e2d730171"],
    )


class CallerUtteranceStart(_Event):
    type: Literal["caller_utterance_start"] = Field(
        default="caller_utterance_start",
        description="Event type; always `caller_utterance_start` for this event.",
    )
    turn: int = Field(ge=0, description="Caller turn number, from 1.")
    kind: UtteranceKind = Field(
        description="Why the caller said this: a scripted anchor, a challenge answer, a repeat or rephrase after a repair request, a request for a human, a nudge, a patience prompt or a planned interruption."
    )
    anchor_id: str | None = Field(
        default=None,
        description="Id of the scenario's caller anchor being said; None for utterances that are not an anchor.",
        examples=["issue"],
    )
    text: str = Field(
        description="The words the caller said, as rendered for its condition (wording, disfluency)."
    )
    duration_ms: int = Field(ge=0, description="Length of the caller's audio for the utterance, in ms.")
    voice: dict[str, Any] | None = Field(
        default=None,
        description="What made the audio: backend, version and the parameters it applied; None when not recorded.",
    )
    """What made the audio: backend, version and the parameters it applied (a recording's hash and
    original level, a neural model's hash and licence)."""


class CallerUtteranceEnd(_Event):
    type: Literal["caller_utterance_end"] = Field(
        default="caller_utterance_end",
        description="Event type; always `caller_utterance_end` for this event.",
    )
    turn: int = Field(ge=0, description="Caller turn number, from 1.")
    truncated: bool = Field(
        default=False, description="The utterance was cut off before its audio finished playing."
    )


class CallerDecision(_Event):
    """The caller policy's reading of an agent turn and what it did about it; burden metrics rest on it."""

    type: Literal["caller_decision"] = Field(
        default="caller_decision", description="Event type; always `caller_decision` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    heard: str = Field(description="The agent's words as the caller policy read them.")
    classification: Classification = Field(
        description="The primary dialogue act the acting reader found in the agent's turn."
    )
    action: str = Field(
        description="What the caller did: `say:<anchor id>`, `close`, `request_human` and the like.",
        examples=["say:issue", "close", "request_human"],
    )
    reason: str = Field(description="Why the policy chose the action, in words.")
    challenge_fact: str | None = Field(
        default=None,
        description="Caller fact the agent asked for, when the turn was a challenge; None otherwise.",
        examples=["holder_name", "postcode"],
    )
    tags: tuple[str, ...] = Field(
        default=(), description="Rules of the turn's other dialogue acts, beside the primary one."
    )
    acts: tuple[str, ...] = Field(
        default=(),
        description="Every dialogue act the acting reader found in the turn, primary first.",
        examples=[["challenge", "question"]],
    )
    """Every dialogue act the acting reader found in the turn, primary first (`classification` is
    the primary one in the coarser logged vocabulary; `tags` are the other acts' rules)."""


class CallerReading(_Event):
    """The other reader's reading of the turn just decided (logged only when a second reader runs),
    so the two observers' disagreement is visible per turn; `error` when it could not read."""

    type: Literal["caller_reading"] = Field(
        default="caller_reading", description="Event type; always `caller_reading` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    reader: str = Field(
        description="Name of the second reader that made this reading.", examples=["rules", "model:llama-cpp"]
    )
    acting_reader: str = Field(
        description="Name of the reader whose reading the caller acted on.", examples=["rules"]
    )
    classification: Classification | None = Field(
        default=None, description="The primary act this reader found; None when it could not read."
    )
    acts: tuple[str, ...] = Field(
        default=(), description="Every dialogue act this reader found, primary first."
    )
    rule: str | None = Field(
        default=None, description="Rule (or model) that produced the primary act; None when none did."
    )
    challenge_fact: str | None = Field(
        default=None,
        description="Caller fact this reader saw asked for; None when none.",
        examples=["postcode"],
    )
    error: str | None = Field(
        default=None, description="Why this reader could not read the turn; None when it read it."
    )
    elapsed_ms: float = Field(default=0.0, ge=0, description="Time the reader took, in ms of wall time.")


class AsrCheck(_Event):
    """The caller's ASR on a turn whose words the agent also gave (`agent_transcript`, source agent):
    measures the caller's ears; never read by the caller policy."""

    type: Literal["asr_check"] = Field(
        default="asr_check", description="Event type; always `asr_check` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    text: str = Field(description="What the caller's ASR heard of the agent's audio.")
    confidence: float | None = Field(
        default=None, description="Recogniser confidence, 0-1; None when the recogniser gives none."
    )


class AgentSpeechStart(_Event):
    type: Literal["agent_speech_start"] = Field(
        default="agent_speech_start", description="Event type; always `agent_speech_start` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )


class AgentSpeechEnd(_Event):
    type: Literal["agent_speech_end"] = Field(
        default="agent_speech_end", description="Event type; always `agent_speech_end` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    duration_ms: int = Field(ge=0, description="Length of the agent's speech in the turn, in ms.")
    interrupted: bool = Field(default=False, description="The caller barged in before the agent finished.")


class AgentAudio(_Event):
    type: Literal["agent_audio"] = Field(
        default="agent_audio", description="Event type; always `agent_audio` for this event."
    )
    duration_ms: float = Field(ge=0, description="Length of the audio chunk in ms.")
    n_bytes: int = Field(ge=0, description="Size of the audio chunk as the agent sent it, in bytes.")
    encoding: Literal["pcm16", "mulaw"] = Field(description="Encoding of the chunk as the agent sent it.")
    sample_rate: int = Field(
        gt=0,
        description="Sample rate of the chunk as the agent sent it, in Hz.",
        examples=[16000, 8000, 24000],
    )


class AgentTranscript(_Event):
    """Words the agent said: from the agent itself, or from the harness's own ASR of the agent audio."""

    type: Literal["agent_transcript"] = Field(
        default="agent_transcript", description="Event type; always `agent_transcript` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    text: str = Field(description="The agent's words for the turn.")
    source: Literal["agent", "harness_asr"] = Field(
        description="`agent`: the agent reported the words; `harness_asr`: the harness recognised them from the agent's audio."
    )
    confidence: float | None = Field(
        default=None, description="Recogniser confidence, 0-1, for `harness_asr`; None when there is none."
    )


class AgentHeard(_Event):
    """What the agent's own recogniser made of the caller (cascaded and hybrid agents expose it)."""

    type: Literal["agent_heard"] = Field(
        default="agent_heard", description="Event type; always `agent_heard` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    text: str = Field(description="What the agent's recogniser heard the caller say.")
    confidence: float | None = Field(
        default=None, description="Recogniser confidence, 0-1; None when the recogniser gives none."
    )


class ToolCall(_Event):
    type: Literal["tool_call"] = Field(
        default="tool_call", description="Event type; always `tool_call` for this event."
    )
    call_id: str = Field(
        description="Id of the tool call, as the agent gave it; its `tool_result` carries the same id.",
        examples=["call_1"],
    )
    name: str = Field(description="Name of the tool called.", examples=["issue_refund"])
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments the agent passed to the tool.",
        examples=[{"account_id": "ACC-40817"}],
    )


class ToolResult(_Event):
    type: Literal["tool_result"] = Field(
        default="tool_result", description="Event type; always `tool_result` for this event."
    )
    call_id: str = Field(description="Id of the tool call this result answers.", examples=["call_1"])
    name: str = Field(description="Name of the tool.", examples=["issue_refund"])
    ok: bool = Field(description="The tool call succeeded.")
    result_keys: tuple[str, ...] = Field(
        default=(),
        description="Top-level keys of the tool's result (values are not logged).",
        examples=[["refund_id", "amount"]],
    )
    error: str | None = Field(
        default=None, description="The tool's error message when `ok` is false; None otherwise."
    )


class StateTransition(_Event):
    type: Literal["state_transition"] = Field(
        default="state_transition", description="Event type; always `state_transition` for this event."
    )
    from_state: str = Field(description="Agent state before the transition, as the agent names it.")
    to_state: str = Field(description="Agent state after the transition, as the agent names it.")
    flags: tuple[str, ...] = Field(default=(), description="Flags the agent attached to the transition.")


class EscalationRequested(_Event):
    """The caller asked for a human; Esc(e) runs from here to a handoff or a terminal refusal."""

    type: Literal["escalation_requested"] = Field(
        default="escalation_requested",
        description="Event type; always `escalation_requested` for this event.",
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    reason: EscalationReason = Field(
        description="Why the caller asked for a human: the script said so, too many repairs, a stalled call, a denial, or an unresponsive agent."
    )


class Handoff(_Event):
    type: Literal["handoff"] = Field(
        default="handoff", description="Event type; always `handoff` for this event."
    )
    status: Literal["confirmed", "refused"] = Field(
        description="`confirmed`: the agent handed the call to a human; `refused`: it declined to."
    )
    source: Literal["tool", "agent_words", "agent_state"] = Field(
        description="What the handoff was recognised from: a tool call, the agent's words, or its declared state."
    )


class BargeIn(_Event):
    """Someone started talking over the other. A planned caller interruption carries the agent turn,
    how much of it had played (`played_ms`) and the declared reason."""

    type: Literal["barge_in"] = Field(
        default="barge_in", description="Event type; always `barge_in` for this event."
    )
    by: Literal["caller", "agent"] = Field(description="Who started talking over the other.")
    turn: int | None = Field(
        default=None, ge=0, description="Caller turn of a planned caller interruption; None otherwise."
    )
    played_ms: int | None = Field(
        default=None,
        ge=0,
        description="How much of the agent's turn had played when the caller cut in, in ms; None when not a planned interruption.",
    )
    reason: Literal["impatience", "correction"] | None = Field(
        default=None, description="Declared reason of a planned caller interruption; None otherwise."
    )


class AgentClear(_Event):
    """The agent dropped its own queued audio: a Twilio `clear`, or a Realtime cancel/truncation."""

    type: Literal["agent_clear"] = Field(
        default="agent_clear", description="Event type; always `agent_clear` for this event."
    )
    source: Literal["twilio_clear", "response_cancel", "truncate", "bot_interrupted"] = Field(
        description="How the agent dropped its audio: a Twilio `clear`, a Realtime response cancel, a truncation, or a WebRTC bot's RTVI `bot-interrupted`."
    )
    dropped_ms: int = Field(ge=0, description="Queued agent audio dropped, in ms.")


class AgentYield(_Event):
    """How the agent reacted to a caller barge-in, measured on the recording's agent channel.

    `stop_latency_ms` runs from the barge-in to the start of the agent's first quiet stretch (400 ms)
    after it, so an agent that never yields shows the rest of its speech; `overlap_ms` is how long
    both talked at once; `cleared`: the agent dropped its queued audio (a clear or cancel)."""

    type: Literal["agent_yield"] = Field(
        default="agent_yield", description="Event type; always `agent_yield` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    stop_latency_ms: int | None = Field(
        default=None,
        ge=0,
        description="From the barge-in to the agent's first quiet stretch (400 ms) after it, in ms; None when the agent never went quiet.",
    )
    overlap_ms: int = Field(ge=0, description="How long both talked at once, in ms.")
    cleared: bool = Field(
        default=False, description="The agent dropped its queued audio (a clear or cancel)."
    )


class AgentSilence(_Event):
    """An agent turn with no words: the agent said nothing for `silence_ms` after the caller's turn.
    Not an agent turn; the caller's patience decides what follows."""

    type: Literal["agent_silence"] = Field(
        default="agent_silence", description="Event type; always `agent_silence` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    silence_ms: int = Field(
        ge=0, description="How long the agent said nothing after the caller's turn, in ms."
    )


class CallerPatience(_Event):
    """A decision of the caller's patience: prompt the agent, ask for a human, or hang up.
    `silence_ms` is the agent's silence so far, `prompts` the unanswered prompts, `budget_ms` the
    whole patience of the caller with a silent agent; `kind: repair_loop` decisions count
    `exchanges` instead (`voice_audit.scenarios.safety.repair_exchange`)."""

    type: Literal["caller_patience"] = Field(
        default="caller_patience", description="Event type; always `caller_patience` for this event."
    )
    turn: int = Field(
        ge=0, description="Caller turn the event belongs to (0 before the caller's first utterance)."
    )
    action: Literal["prompt", "ask_human", "hang_up"] = Field(
        description="What the caller's patience decided: prompt the agent, ask for a human, or hang up."
    )
    silence_ms: int = Field(
        ge=0, description="The agent's silence so far, in ms (0 for a repair-loop decision)."
    )
    prompts: int = Field(
        ge=0, description="Prompts the agent has left unanswered so far (0 for a repair-loop decision)."
    )
    budget_ms: int = Field(ge=0, description="The caller's whole patience with a silent agent, in ms.")
    reason: str = Field(description="Why the patience decided so, in words.")
    kind: Literal["silence", "repair_loop"] = Field(
        default="silence",
        description="Which patience decided: with a silent agent, or with a repair loop (consecutive unproductive exchanges).",
    )
    exchanges: int | None = Field(
        default=None,
        ge=0,
        description="Consecutive unproductive exchanges so far (repair-loop decisions); None for silence.",
    )


class NonService(_Event):
    """The agent did not serve the caller: the call is an outcome (`unresolved` with flag `reason`),
    not missing data. `kind` is the agent-side failure behind it, when there was one."""

    type: Literal["non_service"] = Field(
        default="non_service", description="Event type; always `non_service` for this event."
    )
    reason: NonServiceFlag = Field(
        description="The non-service flag the call carries (its outcome is `unresolved`)."
    )
    kind: FailureKind | None = Field(
        default=None,
        description="The agent-side failure kind behind it; None when no failure ended the call.",
    )
    message: str = Field(default="", description="Details of what happened; empty when there are none.")


class Dtmf(_Event):
    type: Literal["dtmf"] = Field(default="dtmf", description="Event type; always `dtmf` for this event.")
    digit: str = Field(pattern=r"^[0-9*#A-D]$", description="Keypad digit pressed.", examples=["5", "#"])


class Mark(_Event):
    type: Literal["mark"] = Field(default="mark", description="Event type; always `mark` for this event.")
    name: str = Field(description="Name of the playback mark.", examples=["turn-3"])
    action: Literal["received", "echoed", "cleared"] = Field(
        description="`received`: the agent sent the mark; `echoed`: the harness played up to it and echoed it; `cleared`: dropped by a clear."
    )


class ErrorEvent(_Event):
    type: Literal["error"] = Field(default="error", description="Event type; always `error` for this event.")
    kind: FailureKind = Field(
        description="Machine-readable failure kind; its side is in FAILURE_SIDE.",
        examples=["disconnect", "audio_error"],
    )
    message: str = Field(description="What failed, in words.")
    fatal: bool = Field(default=True, description="The error ended the call.")


class Usage(_Event):
    """What the agent side reported it consumed (Realtime `response.done` usage, Gemini
    `usageMetadata`, an LLM agent's tokens), as reported: the run's usage ledger sums these per call."""

    type: Literal["usage"] = Field(default="usage", description="Event type; always `usage` for this event.")
    source: str = Field(
        description="Who reported it.", examples=["realtime.response.done", "gemini.usageMetadata", "llm"]
    )
    model: str | None = Field(default=None, description="Model the usage was on; None when not given.")
    quantities: dict[str, float] = Field(
        description="Meter -> quantity as reported (input_tokens, output_audio_tokens, ...).",
        examples=[{"input_tokens": 812, "output_tokens": 95}],
    )
    unknown: tuple[str, ...] = Field(
        default=(),
        description="Meters left unreported for this part of the call: the call's quantity of each is unknown.",
        examples=[["input_tokens", "output_tokens"]],
    )


class RateLimited(_Event):
    """The agent's vendor answered with a rate limit (HTTP 429, a WebSocket close 1013, SIP 503, a
    Realtime `rate_limits.updated` at zero): the harness waits `retry_after_s` and places the call
    again; not the agent's non-service and not a failure of the call that is finally recorded."""

    type: Literal["rate_limited"] = Field(
        default="rate_limited", description="Event type; always `rate_limited` for this event."
    )
    source: str = Field(
        description="What signalled the limit.", examples=["http_429", "ws_close_1013", "realtime"]
    )
    retry_after_s: float | None = Field(
        default=None, ge=0, description="Seconds the vendor asked to wait; None when it gave none."
    )
    message: str = Field(default="", description="Details as the vendor gave them.")


class AgentSignal(_Event):
    """A protocol signal from the agent side, logged as it came: Gemini Live's `turn_complete`,
    `generation_complete`, `interrupted`, `go_away` (with `time_left_s`), `session_resumed`,
    `tool_call_cancellation`. Not a speech or outcome measure; the key to the vendor's own timeline."""

    type: Literal["agent_signal"] = Field(
        default="agent_signal", description="Event type; always `agent_signal` for this event."
    )
    name: str = Field(
        description="The signal, in snake case.", examples=["turn_complete", "interrupted", "go_away"]
    )
    detail: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict,
        description="What the signal carried (e.g. `time_left_s` of a go_away); empty when nothing.",
        examples=[{"time_left_s": 10.0, "resumable": True}],
    )


class HangUp(_Event):
    type: Literal["hang_up"] = Field(
        default="hang_up", description="Event type; always `hang_up` for this event."
    )
    by: Literal["caller", "agent", "harness"] = Field(description="Who ended the call.")
    reason: str = Field(
        description="Why the call was ended: the caller's reason, the non-service flag, or the failure kind.",
        examples=["agent_unresponsive", "timeout_turn"],
    )


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
    | Usage
    | RateLimited
    | AgentSignal
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
        Usage,
        RateLimited,
        AgentSignal,
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
