"""The call log: what every transport of a call writes through, on one episode clock.

A transport (turn-based or streaming) never touches the event log, the recording or the playback
queue by itself; it reports what happened here (a caller utterance started or ended, agent audio
arrived, an agent event, a failure) and the call log stamps, schedules, records and labels it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from voice_audit.harness.adapter import (
    CALLER_ACT,
    HUMAN_REQUEST_ACT,
    AgentError,
    AgentEvent,
    CalibrationOracle,
    ErrorOut,
    FactsSeenOut,
    HeardOut,
    RateLimited,
    RateLimitOut,
    SignalOut,
    StateOut,
    ToolCallOut,
    ToolResultOut,
    UsageOut,
)
from voice_audit.harness.caller.policy import Decision, Say
from voice_audit.harness.model.events import Event, FailureKind, NonServiceFlag
from voice_audit.harness.runtime.clock import EpisodeClock
from voice_audit.harness.runtime.eventlog import EventLog, Stamper
from voice_audit.harness.runtime.playback import Playback
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.voice import Spoken
from voice_audit.personas import CallerCondition


class CallFailed(AgentError):
    """A failure the harness detected itself (timeouts, fatal agent error events, a session that raised)."""


class AgentReportedError(CallFailed):
    """The agent's own fatal error event: always the agent's side, whatever kind it names."""


class CallLog:
    """Stamping, the playback clock, the recorder and the caller's turn counter of one call."""

    def __init__(
        self,
        log: EventLog,
        clock: EpisodeClock,
        recorder: CallRecorder,
        condition: CallerCondition,
        channel_info: dict[str, Any],
        oracle: CalibrationOracle | None = None,
    ) -> None:
        self.log = log
        self.clock = clock
        self.recorder = recorder
        self.stamper = Stamper(log, clock)
        self.playback = Playback(self.stamper, recorder)
        self.condition = condition
        self.channel_info = channel_info
        self.oracle = oracle
        self.turn = 0
        """The caller's turn number the events carry (a decision to hang up without a line takes one)."""
        self.spoken = 0
        """Caller turns spoken: utterances started, the record's `turns`."""
        self.facts_seen: str | None = None
        self.caller_end_ms = 0
        """End of the caller's last utterance on the episode clock (as logged, even if still playing)."""
        self._pending_escalation: str | None = None
        self.asr_seconds = 0.0
        """Seconds of agent audio the harness's own recogniser read in this call (the usage ledger's)."""
        self.pause_agent_s: float | None = None
        """The longest wait a `RateLimitOut` asked for before the next call to this agent."""

    # -- time and raw events -----------------------------------------------------------
    def now(self) -> int:
        return self.stamper.now()

    def emit(self, type_: str, t_ms: int | None = None, **fields: Any) -> Event:
        return self.stamper.emit(type_, t_ms, **fields)

    def flush(self, until_ms: int | None = None) -> None:
        self.stamper.flush(until_ms)

    @property
    def events(self) -> list[Event]:
        return self.stamper.events

    # -- the caller's utterances -----------------------------------------------------
    def caller_will_say(self, spoken: Spoken, say: Say | None) -> None:
        """Calibration mode only: label this exact audio for the agent's planted-effect detector."""
        if self.oracle is None:
            return
        labels = self.condition.model_dump()
        if say is not None and say.kind == "human_request":
            labels[CALLER_ACT] = HUMAN_REQUEST_ACT
        self.oracle.label(spoken.wire, labels)

    def utterance_started(self, t_ms: int, spoken: Spoken, say: Say | None) -> None:
        """Log the start of a caller utterance and place its audio on the recording."""
        self.spoken += 1
        self.stamper.emit(
            "caller_utterance_start",
            t_ms,
            turn=self.turn,
            kind=say.kind if say else "anchor",
            anchor_id=say.anchor_id if say else None,
            text=spoken.text,
            duration_ms=spoken.duration_ms,
            voice=spoken.voice or None,
        )
        self.recorder.caller(t_ms, spoken.line, spoken.line_rate)

    def utterance_ended(
        self, t_ms: int, spoken: Spoken, *, truncated: bool = False, scheduled: bool = False
    ) -> None:
        """Log the end of a caller utterance (and an escalation request it carried); `scheduled`:
        `t_ms` lies ahead of the clock (the pump queues the last frame before it has played)."""
        self.caller_end_ms = max(self.caller_end_ms, t_ms)
        if scheduled:
            self.stamper.schedule("caller_utterance_end", t_ms, turn=self.turn, truncated=truncated)
            if self._pending_escalation is not None:
                self.stamper.schedule(
                    "escalation_requested", t_ms, turn=self.turn, reason=self._pending_escalation
                )
                self._pending_escalation = None
        else:
            self.stamper.emit("caller_utterance_end", t_ms, turn=self.turn, truncated=truncated)
            self.escalation_made(t_ms)
        if "resampling_path" not in self.channel_info and spoken.channel:
            self.channel_info["resampling_path"] = spoken.channel.get("resampling_path")
            self.channel_info["codec"] = spoken.channel.get("codec")

    def escalation_pending(self, reason: str) -> None:
        """A request for a human is about to be said; it is logged once it has been made."""
        self._pending_escalation = reason

    def escalation_made(self, t_ms: int) -> None:
        """Log a pending request for a human at the moment it has been made."""
        if self._pending_escalation is not None:
            self.stamper.emit("escalation_requested", t_ms, turn=self.turn, reason=self._pending_escalation)
            self._pending_escalation = None

    def caller_decided(self, heard: str, d: Decision) -> None:
        """Log the caller policy's reading of an agent turn and what it decided."""
        s = self.stamper
        s.emit(
            "caller_decision",
            turn=self.turn,
            heard=heard,
            classification=d.classification,
            action=d.action,
            reason=f"{d.reason} [rule {d.reading.rule}]",
            challenge_fact=",".join(d.reading.challenge_facts) or None,
            tags=d.reading.tags,
            acts=d.reading.act_names,
        )
        if d.escalation:
            # Esc runs from the moment the request has been made: the end of the caller's request
            # utterance, so the persona's speaking time is not counted as the agent's delay.
            self._pending_escalation = d.escalation
            if d.say is None:
                self.escalation_made(s.now())
        if d.handoff:
            s.emit("handoff", status=d.handoff, source="agent_words")
        self.log.flush()

    # -- the agent -------------------------------------------------------------------
    def agent_event(self, ev: AgentEvent, t_ms: int | None = None) -> None:
        """Log an agent event that is neither audio, words nor flow control; a fatal error ends the call."""
        s = self.stamper
        if isinstance(ev, HeardOut):
            s.emit("agent_heard", t_ms, turn=self.turn, text=ev.text, confidence=ev.confidence)
        elif isinstance(ev, ToolCallOut):
            s.emit("tool_call", t_ms, call_id=ev.call_id, name=ev.name, arguments=ev.arguments)
        elif isinstance(ev, ToolResultOut):
            s.emit(
                "tool_result",
                t_ms,
                call_id=ev.call_id,
                name=ev.name,
                ok=ev.ok,
                result_keys=ev.result_keys,
                error=ev.error,
            )
        elif isinstance(ev, StateOut):
            s.emit("state_transition", t_ms, from_state=ev.from_state, to_state=ev.to_state, flags=ev.flags)
        elif isinstance(ev, FactsSeenOut):
            self.facts_seen = ev.sha256
            s.emit("facts_provisioned", t_ms, sha256=ev.sha256, reported_by_agent=True)
        elif isinstance(ev, UsageOut):
            s.emit(
                "usage",
                t_ms,
                source=ev.source,
                model=ev.model,
                quantities=dict(ev.quantities),
                unknown=ev.unknown,
            )
        elif isinstance(ev, RateLimitOut):
            s.emit("rate_limited", t_ms, source=ev.source, retry_after_s=ev.retry_after_s, message=ev.message)
            self.pause_agent_s = max(self.pause_agent_s or 0.0, ev.retry_after_s)
        elif isinstance(ev, SignalOut):
            s.emit("agent_signal", t_ms, name=ev.name, detail=dict(ev.detail))
        elif isinstance(ev, ErrorOut):
            s.emit("error", t_ms, kind=ev.kind, message=ev.message, fatal=ev.fatal)
            if (
                ev.fatal and ev.kind == "rate_limited"
            ):  # the vendor's load (a close 1013): wait and call again
                raise RateLimited(ev.message, source="agent_close")
            if ev.fatal:
                raise AgentReportedError(ev.kind, ev.message)

    # -- the end ---------------------------------------------------------------------
    def failure(self, kind: FailureKind, message: str, non_service: NonServiceFlag | None = None) -> None:
        """Log a failure at the moment it happened; agent audio scheduled after it never played.
        With `non_service`, the agent did not serve the caller: an outcome, logged as such."""
        now = self.stamper.now()
        self.stamper.flush(now)
        self.stamper.drop_pending_after(now)
        self.recorder.clear_agent_after(now)
        with contextlib.suppress(ValueError):
            self.stamper.emit("error", kind=kind, message=message, fatal=True)
            if non_service is not None:
                self.stamper.emit("non_service", reason=non_service, kind=kind, message=message)
                self.stamper.emit("hang_up", by="agent", reason=non_service)
            else:
                self.stamper.emit("hang_up", by="harness", reason=kind)
