"""The agent plug point: what an adapter must provide, and what flows between it and the harness.

An adapter opens one session per call. The harness pushes caller audio in the session's input
format and reads agent events until the call ends. Two styles share this one interface:

- turn-based sessions (in-process, HTTP turn API) answer each `end_turn()` with events that end
  in `TurnEnd`; they can run in accelerated pacing on a virtual clock;
- streaming sessions (WebSocket, Twilio Media Streams, OpenAI Realtime) take 20 ms frames in real
  time and emit events whenever the agent speaks; they need real-time pacing.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from voice_audit.harness.model.campaign import AgentSpec, Architecture, FactsDisclosure
from voice_audit.harness.model.events import FailureKind
from voice_audit.scenarios import Facts, sha256_of

Encoding = Literal["pcm16", "mulaw"]


@dataclass(frozen=True, slots=True)
class AudioFormat:
    encoding: Encoding = "pcm16"
    sample_rate: int = 16000

    @property
    def bytes_per_second(self) -> int:
        return self.sample_rate * (2 if self.encoding == "pcm16" else 1)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an adapter exposes; analysis treats what is not exposed as missing, never as zero."""

    architecture: Architecture | None
    turn_based: bool
    streaming: bool
    transcripts: bool
    tool_trace: bool
    fact_provisioning: bool
    input_format: AudioFormat = AudioFormat()
    protocol: str = "in-process"


class CalibrationOracle(Mapping[str, Mapping[str, str]]):
    """Calibration mode's perfect detector of each caller turn's condition, for one call.

    The harness labels the exact bytes of every caller turn before sending them; an in-process
    agent reads it (`CallInfo.oracle`) as a read-only mapping from `utterance_key(audio)` to the
    turn's labels. It stands in for a detector that is always right, so a planted effect's size is
    known. Never given in an audit.
    """

    __slots__ = ("_labels",)

    def __init__(self) -> None:
        self._labels: dict[str, dict[str, str]] = {}

    def label(self, audio: bytes, labels: Mapping[str, str]) -> None:
        self._labels[utterance_key(audio)] = {str(k): str(v) for k, v in labels.items()}

    def lookup(self, audio: bytes) -> Mapping[str, str] | None:
        return self._labels.get(utterance_key(audio))

    def __getitem__(self, key: str) -> Mapping[str, str]:
        return self._labels[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels)

    def __len__(self) -> int:
        return len(self._labels)


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What the agent is told about a call. It carries no trace of the caller's condition.

    `call_id` is random per call, so ids, file names and metadata the agent could see never
    reveal which side of a pair it is serving. `oracle` is set only in calibration mode (agent
    option `calibration_oracle: true`), for in-process agents.
    """

    facts: Facts
    scenario_id: str
    call_id: str = field(default_factory=lambda: "CA" + secrets.token_hex(16))
    caller_number: str = "+15550100000"
    facts_sha256: str = ""
    oracle: CalibrationOracle | None = None
    disclosure: FactsDisclosure = "full"
    """What of `facts` the agent may be sent (`voice_audit.harness.disclosure`); protocol adapters send exactly that."""

    def __post_init__(self) -> None:
        if not self.facts_sha256:
            object.__setattr__(self, "facts_sha256", sha256_of(self.facts))


@dataclass(frozen=True, slots=True)
class AudioOut:
    pcm: bytes
    sample_rate: int
    encoding: Encoding = "pcm16"

    @property
    def duration_ms(self) -> float:
        per_sample = 2 if self.encoding == "pcm16" else 1
        return 1000.0 * len(self.pcm) / per_sample / self.sample_rate


@dataclass(frozen=True, slots=True)
class TextOut:
    """Words the agent says in this turn, as the agent itself reports them."""

    text: str


@dataclass(frozen=True, slots=True)
class HeardOut:
    """What the agent's recogniser heard from the caller."""

    text: str
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class ToolCallOut:
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResultOut:
    call_id: str
    name: str
    ok: bool
    result_keys: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class StateOut:
    from_state: str
    to_state: str
    flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FactsSeenOut:
    """The hash of the facts the agent says it saw, for the fact-invariance gate."""

    sha256: str


@dataclass(frozen=True, slots=True)
class MarkOut:
    name: str


@dataclass(frozen=True, slots=True)
class ClearOut:
    """Drop agent audio queued but not yet played (barge-in): a Twilio `clear`, a Realtime
    response cancelled or truncated, or a WebRTC bot's RTVI `bot-interrupted` (`source`)."""

    source: Literal["twilio_clear", "response_cancel", "truncate", "bot_interrupted"] = "twilio_clear"


@dataclass(frozen=True, slots=True)
class HangupOut:
    reason: str


@dataclass(frozen=True, slots=True)
class ErrorOut:
    kind: FailureKind
    message: str
    fatal: bool = True


@dataclass(frozen=True, slots=True)
class UsageOut:
    """What the agent side reports it consumed, for the run's usage ledger: meter -> quantity as the
    vendor counts it (Realtime `response.done` usage, Gemini `usageMetadata`, an LLM's tokens).
    Report only what was reported: a meter left out is unknown, never zero."""

    quantities: Mapping[str, float]
    source: str
    model: str | None = None
    unknown: tuple[str, ...] = ()
    """Meters the vendor left unreported for this part of the call (e.g. an answer without usage):
    the call's quantity of each is unknown, not the sum of the parts that were reported."""


@dataclass(frozen=True, slots=True)
class RateLimitOut:
    """The vendor says its limit is reached (a Realtime `rate_limits.updated` at zero remaining):
    the current call goes on; new calls to this agent wait `retry_after_s`."""

    retry_after_s: float
    source: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class SignalOut:
    """A protocol signal the agent side sent that is neither audio, words nor flow control the
    runtime acts on (Gemini Live's `turnComplete`, `interrupted`, `goAway`, a session resumed): logged
    as `agent_signal` on the call clock, so a call can be joined with the vendor's own timeline."""

    name: str
    detail: Mapping[str, str | int | float | bool | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """A turn-based agent finished its response; `compute_ms` is its own measured work."""

    compute_ms: float | None = None


AgentEvent = (
    AudioOut
    | TextOut
    | HeardOut
    | ToolCallOut
    | ToolResultOut
    | StateOut
    | FactsSeenOut
    | MarkOut
    | ClearOut
    | HangupOut
    | ErrorOut
    | SignalOut
    | UsageOut
    | RateLimitOut
    | TurnEnd
)


class AgentError(Exception):
    """Raised by adapters for failures with a machine-readable kind."""

    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.message = message


class RateLimited(AgentError):
    """Raised by an adapter when the vendor refuses for load (HTTP 429, a WebSocket close 1013, SIP
    503): the harness waits (`retry_after_s`, or its own backoff when None) and places the call
    again. A harness-side wait, never the agent's non-service; the attempt is kept and logged."""

    def __init__(self, message: str, retry_after_s: float | None = None, source: str = "rate_limit") -> None:
        super().__init__("rate_limited", message)
        self.retry_after_s = retry_after_s
        self.source = source


def retry_after_seconds(value: str | None) -> float | None:
    """An HTTP `Retry-After` value (seconds, or an HTTP date) as seconds from now; None when absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils
    import time

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@runtime_checkable
class AgentSession(Protocol):
    async def send_audio(self, chunk: bytes) -> None:
        """Caller audio in the adapter's input format: 20 ms frames when streaming, a whole turn otherwise."""

    async def end_turn(self) -> None:
        """The caller finished speaking (commit for turn-based agents; may be a no-op when streaming)."""

    async def send_dtmf(self, digit: str) -> None: ...

    async def mark_played(self, name: str) -> None:
        """The harness's playback clock reached a mark the agent sent (Twilio echoes it back)."""

    async def barge_in(self, played_ms: int) -> None:
        """The caller spoke over the agent after `played_ms` of the current agent turn had played."""

    def events(self) -> AsyncIterator[AgentEvent]:
        """Agent events in order; the iterator ends when the agent side of the call is over."""

    async def close(self, reason: str) -> None: ...


@runtime_checkable
class AgentAdapter(Protocol):
    name: str
    capabilities: Capabilities

    async def connect(self, call: CallInfo) -> AgentSession: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class PreparedAdapter(Protocol):
    """An adapter with costly start-up work (a protocol stack, its sockets, a model): the runtime
    awaits `prepare` once per process before that process's first call, so no call's timing
    pays for it. Optional: adapters without the method start on their first `connect`."""

    async def prepare(self) -> None:
        """Do the start-up work now; an `AgentError` says why it could not (the calls still run)."""


AdapterFactory = Callable[[AgentSpec], AgentAdapter]

CALIBRATION_ORACLE = "calibration_oracle"
"""Agent option (`true`) that turns on calibration mode: each call's `CallInfo.oracle` is set."""
CALLER_ACT = "caller_act"
"""Oracle label key beside the condition levels: the caller's declared act, set on a turn that
asks for a human (value `HUMAN_REQUEST_ACT`), so a planted escalation effect can fire on the
request itself, not on whether the agent's recogniser understood it."""
HUMAN_REQUEST_ACT = "human_request"


def utterance_key(audio: bytes) -> str:
    """Key of one caller turn in a calibration oracle: SHA-256 of the exact bytes the agent received.

    Calibration campaigns check the pipeline against planted effects. With `calibration_oracle: true`
    in an agent's options, the harness hands each call's session a `CalibrationOracle` from this key
    to the condition of the turn (plus `CALLER_ACT` on a request for a human), standing in for a
    perfect detector of what the agent heard. It is never set in an audit.
    """
    return hashlib.sha256(audio).hexdigest()
