"""One call, start to finish: connect, follow the caller policy, log every event, judge, record.

A call that fails (timeout, disconnect, malformed frame, agent error) still produces a record
with its failure kind; it is never counted as completed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import hashlib
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.adapter import (
    CALLER_ACT,
    HUMAN_REQUEST_ACT,
    AgentAdapter,
    AgentError,
    AgentEvent,
    AgentSession,
    AudioOut,
    CallInfo,
    ClearOut,
    ErrorOut,
    FactsSeenOut,
    HangupOut,
    HeardOut,
    MarkOut,
    StateOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
    utterance_key,
)
from harness.audio import AudioError, SpeechRecognizer, SpeechSynthesizer, TelephoneChannel
from harness.caller.policy import CallerPolicy, Decision
from harness.model.campaign import AgentSpec, Campaign
from harness.model.episode import BackendInfo, EpisodeHeader, EpisodeOutcome, EpisodeRecord, Exposure, Status
from harness.model.events import FailureKind
from harness.model.outcome import judge_outcome
from harness.model.secrets import Redactor
from harness.model.versioning import SCHEMA_VERSION
from harness.planning import PlannedEpisode
from harness.rundir import CALL_WAV, EVENTS_JSONL, EventLog
from harness.runtime.clock import EpisodeClock, RealClock, TurnDeadline, VirtualClock
from harness.runtime.eventlog import Stamper
from harness.runtime.playback import Playback
from harness.runtime.recorder import CallRecorder
from harness.runtime.voice import CallerVoice, Spoken, SpokenCache
from harness.tools import ToolFixture
from personas import Catalogue, speech_params
from scenarios import Scenario

CALLER_GAP_MS = 300
"""Accelerated pacing: the caller's reaction time before answering, the same for every condition."""

RETRYABLE: frozenset[str] = frozenset(
    {"connect_failed", "timeout_turn", "timeout_call", "disconnect", "malformed_frame", "protocol_error", "http_error", "agent_error"}
)
"""Failures of the agent or its transport; the harness's own (and cancellations) are never retried."""
RETRY_BACKOFF_S = 0.2
EVENT_HOLD_S = 1.0
"""Accelerated pacing: how long (wall time) a call's events may wait in memory before being written."""
ATTEMPTS_DIR = "attempts"
ATTEMPTS_JSONL = "attempts.jsonl"


def archive_attempt(episode_dir: Path, record: EpisodeRecord) -> None:
    """Move a failed attempt's files to `attempts/<n>/` and append its record to `attempts.jsonl`."""
    n = record.header.attempt
    dest = episode_dir / ATTEMPTS_DIR / str(n)
    dest.mkdir(parents=True, exist_ok=True)
    for name in (EVENTS_JSONL, CALL_WAV):
        if (episode_dir / name).exists():
            (episode_dir / name).replace(dest / name)
    audio = f"episodes/{episode_dir.name}/{ATTEMPTS_DIR}/{n}/{CALL_WAV}"
    moved = record.model_copy(update={"outcome": record.outcome.model_copy(update={"audio_file": audio})})
    with open(episode_dir / ATTEMPTS_JSONL, "ab") as fh:
        fh.write(moved.model_dump_json().encode() + b"\n")
        fh.flush()


def call_id_for(planned: PlannedEpisode, attempt: int) -> str:
    """A call id the agent may see: deterministic (reruns are reproducible) but opaque (a hash that
    reveals neither the side nor the condition)."""
    digest = hashlib.sha256(f"call|{planned.pair.seed}|{planned.episode_id}|{attempt}".encode()).hexdigest()
    return "CA" + digest[:32]


class _CallFailed(AgentError):
    """A failure the harness detected itself (timeouts, fatal agent error events)."""


@dataclass
class EpisodeContext:
    planned: PlannedEpisode
    scenario: Scenario
    catalogue: Catalogue
    campaign: Campaign
    agent: AgentSpec
    adapter: AgentAdapter
    synth: SpeechSynthesizer
    asr: SpeechRecognizer | None
    run_id: str
    plan_sha256: str
    episode_dir: Path
    tts_info: BackendInfo
    asr_info: BackendInfo | None
    attempt: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    spoken_cache: SpokenCache | None = None
    calibration_oracle: dict[str, dict[str, str]] | None = None
    redactor: Redactor | None = None
    files: Executor | None = None
    """Where the episode's files are written (one writer thread per campaign); None: a default thread."""


@dataclass
class _AgentTurn:
    text: list[str] = field(default_factory=list)
    pcm16k: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int16))
    hung_up: str | None = None
    had_audio: bool = False


class EpisodeRunner:
    """Runs one planned call. Turn-based sessions run on either clock; streaming ones need real time."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.ctx = ctx
        pacing = ctx.campaign.pacing
        caps = ctx.adapter.capabilities
        self.clock: EpisodeClock = VirtualClock() if pacing == "accelerated" else RealClock()
        pair = ctx.planned.pair
        condition = pair.condition_a if ctx.planned.side == "a" else pair.condition_b
        self.condition = condition
        self.speech = speech_params(ctx.catalogue, condition, pair.voice_index)
        ch = ctx.campaign.channel
        channel = TelephoneChannel(snr_db=ch.snr_db, packet_loss=ch.packet_loss, seed=pair.seed) if ch.telephone else None
        self.voice = CallerVoice(
            ctx.synth, ctx.catalogue, condition, self.speech, dict(ctx.scenario.caller.slots), pair.seed, channel,
            caps.input_format,
            ctx.spoken_cache,
        )
        self.recorder = CallRecorder(self.voice.line_rate)
        hold_s = EVENT_HOLD_S if pacing == "accelerated" else 0.0
        self.log = EventLog(ctx.episode_dir / EVENTS_JSONL, ctx.redactor, hold_s=hold_s)
        self.stamper = Stamper(self.log, self.clock)
        self.playback = Playback(self.stamper, self.recorder)
        self.policy = CallerPolicy(ctx.scenario)
        self.channel_info: dict[str, Any] = {"telephone": ch.telephone, "snr_db": ch.snr_db, "packet_loss": ch.packet_loss}
        self.turn = 0
        self._pending_escalation: str | None = None
        self.facts_seen: str | None = None
        self.session: AgentSession | None = None
        self._deadline: TurnDeadline | None = None
        self._events: AsyncIterator[AgentEvent] | None = None

    # -- logging helpers --------------------------------------------------------
    def _handle_common(self, ev: AgentEvent, t: int | None = None) -> None:
        s = self.stamper
        if isinstance(ev, HeardOut):
            s.emit("agent_heard", t, turn=self.turn, text=ev.text, confidence=ev.confidence)
        elif isinstance(ev, ToolCallOut):
            s.emit("tool_call", t, call_id=ev.call_id, name=ev.name, arguments=ev.arguments)
        elif isinstance(ev, ToolResultOut):
            s.emit("tool_result", t, call_id=ev.call_id, name=ev.name, ok=ev.ok, result_keys=ev.result_keys, error=ev.error)
        elif isinstance(ev, StateOut):
            s.emit("state_transition", t, from_state=ev.from_state, to_state=ev.to_state, flags=ev.flags)
        elif isinstance(ev, FactsSeenOut):
            self.facts_seen = ev.sha256
            s.emit("facts_provisioned", t, sha256=ev.sha256, reported_by_agent=True)
        elif isinstance(ev, ErrorOut):
            s.emit("error", t, kind=ev.kind, message=ev.message, fatal=ev.fatal)
            if ev.fatal:
                raise _CallFailed(ev.kind, ev.message)

    async def _next_event(self) -> AgentEvent | None:
        assert self._events is not None
        try:
            return await anext(self._events)
        except StopAsyncIteration:
            return None
        except (AgentError, TimeoutError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise _CallFailed("agent_error", f"agent session raised {type(exc).__name__}: {exc}") from exc

    def _turn_deadline(self) -> TurnDeadline:
        assert self._deadline is not None, "turns run inside the call's time limit"
        return self._deadline

    # -- turn-based --------------------------------------------------------------
    async def _agent_turn_based(self) -> _AgentTurn:
        """Collect one response of a turn-based agent and place it on the clock."""
        out = _AgentTurn()
        t0 = self.stamper.now()
        wall0 = time.perf_counter()
        arrived: list[tuple[float, AgentEvent]] = []
        compute_ms: float | None = None
        timeout = self.ctx.campaign.timeouts.turn_s
        self._turn_deadline().start(timeout, f"agent gave no complete turn within {timeout:g} s")
        try:
            while True:
                ev = await self._next_event()
                if ev is None:
                    out.hung_up = out.hung_up or "agent ended the session"
                    break
                if isinstance(ev, TurnEnd):
                    compute_ms = ev.compute_ms
                    break
                arrived.append(((time.perf_counter() - wall0) * 1000.0, ev))
                if isinstance(ev, HangupOut):
                    out.hung_up = ev.reason
                if isinstance(ev, ErrorOut) and ev.fatal:
                    break  # the call is over: waiting for a TurnEnd would report a timeout instead
        except TimeoutError:  # raised by the agent's own code
            raise _CallFailed("timeout_turn", "agent session timed out: gave no complete turn") from None
        finally:
            self._turn_deadline().stop()
        wall_ms = (time.perf_counter() - wall0) * 1000.0
        compute = wall_ms if compute_ms is None else compute_ms
        self.ctx.stats["agent_compute_ms"] = self.ctx.stats.get("agent_compute_ms", 0.0) + compute
        if self.clock.virtual:
            self.clock.advance(compute)
        for offset, ev in arrived:
            t = t0 + round(min(offset, compute)) if self.clock.virtual else None
            if isinstance(ev, AudioOut):
                out.had_audio = True
                self.playback.enqueue(ev, self.stamper.now())
            elif isinstance(ev, TextOut):
                out.text.append(ev.text)
            elif isinstance(ev, HangupOut | MarkOut | ClearOut):
                continue
            else:
                self._handle_common(ev, t)
        out.pcm16k = self.playback.finish_turn()
        await self.clock.sleep_until(self.playback.end_ms)
        self.stamper.flush(self.stamper.now())
        return out

    async def _say_turn_based(self, spoken: Spoken) -> None:
        assert self.session is not None
        if self.clock.virtual:
            self.clock.advance(CALLER_GAP_MS)
        t = self.stamper.now()
        self._log_utterance_start(t, spoken)
        self.recorder.caller(t, spoken.line, spoken.line_rate)
        await self.clock.sleep_until(t + spoken.duration_ms)
        self._utterance_ended(t + spoken.duration_ms, spoken)
        self._tell_oracle(spoken)
        timeout = self.ctx.campaign.timeouts.turn_s
        self._turn_deadline().start(timeout, f"agent took the caller's turn for over {timeout:g} s")
        try:  # an HTTP agent answers inside end_turn
            await self.session.send_audio(spoken.wire)
            await self.session.end_turn()
        except TimeoutError:  # raised by the agent's own code
            raise _CallFailed("timeout_turn", "agent session timed out taking the caller's turn") from None
        except AgentError:
            raise
        except Exception as exc:
            raise _CallFailed("agent_error", f"agent session raised {type(exc).__name__}: {exc}") from exc
        finally:
            self._turn_deadline().stop()

    # -- shared ------------------------------------------------------------------
    def _emit_escalation(self, t_ms: int) -> None:
        if self._pending_escalation is not None:
            self.stamper.emit("escalation_requested", t_ms, turn=self.turn, reason=self._pending_escalation)
            self._pending_escalation = None

    def _utterance_ended(self, t_ms: int, spoken: Spoken, *, truncated: bool = False, scheduled: bool = False) -> None:
        """Log the end of a caller utterance (and an escalation request it carried)."""
        if scheduled:
            self.stamper.schedule("caller_utterance_end", t_ms, turn=self.turn, truncated=truncated)
            if self._pending_escalation is not None:
                self.stamper.schedule("escalation_requested", t_ms, turn=self.turn, reason=self._pending_escalation)
                self._pending_escalation = None
        else:
            self.stamper.emit("caller_utterance_end", t_ms, turn=self.turn, truncated=truncated)
            self._emit_escalation(t_ms)
        if "resampling_path" not in self.channel_info and spoken.channel:
            self.channel_info["resampling_path"] = spoken.channel.get("resampling_path")
            self.channel_info["codec"] = spoken.channel.get("codec")

    def _tell_oracle(self, spoken: Spoken) -> None:
        """Calibration mode only: label this exact audio for the agent's planted-effect detector."""
        oracle = self.ctx.calibration_oracle
        if oracle is not None:
            labels = self.condition.model_dump()
            if self._pending_say is not None and self._pending_say.kind == "human_request":
                labels[CALLER_ACT] = HUMAN_REQUEST_ACT
            oracle[utterance_key(spoken.wire)] = labels

    def _log_utterance_start(self, t: int, spoken: Spoken) -> None:
        say = self._pending_say
        self.stamper.emit(
            "caller_utterance_start", t, turn=self.turn, kind=say.kind if say else "anchor",
            anchor_id=say.anchor_id if say else None, text=spoken.text, duration_ms=spoken.duration_ms,
        )

    async def _hear(self, turn: _AgentTurn) -> str:
        """The agent's words for the caller policy: its own text when exposed, else our ASR of its audio."""
        if turn.text:
            text = " ".join(t.strip() for t in turn.text if t.strip())
            self.stamper.emit("agent_transcript", turn=self.turn, text=text, source="agent")
            return text
        if not turn.had_audio or len(turn.pcm16k) < 1600:
            return ""
        if self.ctx.asr is None:
            raise _CallFailed("harness_error", "agent exposes no transcript and the campaign has no ASR backend")
        tr = await self.ctx.asr.transcribe(turn.pcm16k, 16000)
        self.stamper.emit("agent_transcript", turn=self.turn, text=tr.text, source="harness_asr", confidence=tr.confidence)
        return tr.text

    def _log_decision(self, text: str, d: Decision) -> None:
        s = self.stamper
        s.emit(
            "caller_decision", turn=self.turn, heard=text, classification=d.classification, action=d.action,
            reason=f"{d.reason} [rule {d.reading.rule}]",
            challenge_fact=",".join(d.reading.challenge_facts) or None,
            tags=d.reading.tags,
        )
        if d.escalation:
            # Esc runs from the moment the request has been made: the end of the caller's request
            # utterance, so the persona's speaking time is not counted as the agent's delay.
            self._pending_escalation = d.escalation
            if d.say is None:
                self._emit_escalation(s.now())
        if d.handoff:
            s.emit("handoff", status=d.handoff, source="agent_words")
        self.log.flush()

    async def _converse(self) -> str:
        """The call loop; returns the termination reason."""
        streaming = not self.ctx.adapter.capabilities.turn_based
        if streaming:
            from harness.runtime.streaming import StreamingCall

            return await StreamingCall(self).run()
        return await self.conversation(self._agent_turn_based, self._say_or_close)

    async def _say_or_close(self, spoken: Spoken, last: bool) -> None:
        """Turn-based reply: send the utterance; the closing words are only recorded, not sent."""
        if not last:
            await self._say_turn_based(spoken)
            return
        t = self.stamper.now() + (CALLER_GAP_MS if self.clock.virtual else 0)
        self._log_utterance_start(t, spoken)
        self.recorder.caller(t, spoken.line, spoken.line_rate)
        self.clock.advance(CALLER_GAP_MS + spoken.duration_ms)
        await self.clock.sleep_until(t + spoken.duration_ms)
        self._utterance_ended(t + spoken.duration_ms, spoken)

    async def conversation(
        self,
        next_turn: Callable[[], Awaitable[_AgentTurn]],
        say: Callable[[Spoken, bool], Awaitable[None]],
    ) -> str:
        """The call loop every pacing shares: hear the agent, decide, reply, until someone hangs up.
        Returns the termination reason."""
        self._pending_say = None
        turn = await next_turn()
        while True:
            text = await self._hear(turn)
            decision = self.policy.decide(text)
            self._log_decision(text, decision)
            if turn.hung_up:
                self.stamper.emit("hang_up", by="agent", reason=turn.hung_up)
                return f"agent hung up: {turn.hung_up}"
            self.turn += 1
            if decision.say is not None:
                self._pending_say = decision.say
                await say(await self.voice.speak(decision.say, self.turn), decision.hang_up)
            self._emit_escalation(self.stamper.now())
            if decision.hang_up:
                self.stamper.emit("hang_up", by="caller", reason=decision.reason)
                return f"caller hung up: {decision.reason}"
            turn = await next_turn()

    # -- the whole episode -----------------------------------------------------------
    async def run(self) -> EpisodeRecord:
        """The call, retried up to `campaign.retries` times after a retryable failure.

        Only the last attempt is returned (one record per episode in episodes.jsonl, with its
        `attempt` number); each earlier attempt is kept whole under `episodes/<id>/attempts/<n>/`
        (events.jsonl, call.wav) with its own record appended to `episodes/<id>/attempts.jsonl`.
        A resume that finds the episode unfinished drops the folder and starts again at attempt 0.
        """
        record = await self._attempt()
        while (
            record.outcome.status == "failed"
            and record.outcome.failure_kind in RETRYABLE
            and record.header.attempt < self.ctx.campaign.retries
        ):
            await asyncio.to_thread(archive_attempt, self.ctx.episode_dir, record)
            await asyncio.sleep(min(RETRY_BACKOFF_S * 2**record.header.attempt, 5.0))
            retry = EpisodeRunner(dataclasses.replace(self.ctx, attempt=record.header.attempt + 1))
            record = await retry._attempt()
        return record

    async def _attempt(self) -> EpisodeRecord:
        ctx = self.ctx
        call = CallInfo(
            facts=ctx.scenario.facts,
            scenario_id=ctx.scenario.id,
            facts_sha256=ctx.scenario.facts_sha256,
            call_id=call_id_for(ctx.planned, ctx.attempt),
        )
        fixture = ToolFixture(ctx.scenario.facts)
        status: Status = "completed"
        failure: FailureKind | None = None
        termination = ""
        self._pending_say = None
        try:
            async with asyncio.timeout(ctx.campaign.timeouts.call_s) as call_limit:
                self._deadline = TurnDeadline(call_limit)
                try:
                    termination = await self._connect_and_converse(call, fixture)
                finally:
                    self._deadline.close()
        except AgentError as exc:
            status, failure, termination = "failed", exc.kind, exc.message
        except TimeoutError:
            if self._deadline is not None and self._deadline.expired is not None:
                status, failure, termination = "failed", "timeout_turn", self._deadline.expired
            else:
                status, failure = "failed", "timeout_call"
                termination = f"call exceeded {ctx.campaign.timeouts.call_s:g} s"
        except asyncio.CancelledError:
            self._record_failure("cancelled", "campaign cancelled while the call was in progress")
            await self._close_session("cancelled")
            self.log.close()
            raise
        except AudioError as exc:  # the caller's own voice or ears failed (a TTS endpoint down, a hung engine)
            status, failure, termination = "failed", "audio_error", f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a bug in the harness must not take the campaign down
            status, failure = "failed", "harness_error"
            termination = f"{type(exc).__name__}: {exc}"
            ctx.stats.setdefault("harness_errors", []).append(traceback.format_exc())
        if failure is not None:
            self._record_failure(failure, termination)
        await self._close_session(termination)
        record = self._finish(status, failure, termination)
        await asyncio.get_running_loop().run_in_executor(ctx.files, self._write_files, record.outcome.duration_ms)
        return record

    def _write_files(self, end_ms: int) -> None:
        """The call's files, off the event loop; the record is appended only after this returns."""
        self.log.close()
        self.recorder.write(self.ctx.episode_dir / CALL_WAV, min_ms=end_ms)

    async def _connect_and_converse(self, call: CallInfo, fixture: ToolFixture) -> str:
        ctx = self.ctx
        try:
            async with asyncio.timeout(ctx.campaign.timeouts.connect_s):
                self.session = await ctx.adapter.connect(call)
        except TimeoutError:
            raise _CallFailed("connect_failed", f"no session within {ctx.campaign.timeouts.connect_s:g} s") from None
        except AgentError:
            raise
        except Exception as exc:
            raise _CallFailed("connect_failed", f"{type(exc).__name__}: {exc}") from exc
        self._events = self.session.events().__aiter__()
        self.stamper.emit("call_started", 0, pacing=ctx.campaign.pacing, protocol=ctx.adapter.capabilities.protocol)
        self.stamper.emit("facts_provisioned", sha256=call.facts_sha256, tools=fixture.available())
        return await self._converse()

    def _record_failure(self, kind: FailureKind, message: str) -> None:
        """Log the failure at the moment it happened; agent audio scheduled after it never played."""
        now = self.stamper.now()
        self.stamper.flush(now)
        self.stamper.drop_pending_after(now)
        self.recorder.clear_agent_after(now)
        with contextlib.suppress(ValueError):
            self.stamper.emit("error", kind=kind, message=message, fatal=True)
            self.stamper.emit("hang_up", by="harness", reason=kind)

    async def _close_session(self, reason: str) -> None:
        if self.session is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await self.session.close(reason)

    def _finish(self, status: Status, failure: FailureKind | None, termination: str) -> EpisodeRecord:
        ctx = self.ctx
        caps = ctx.adapter.capabilities
        self.stamper.flush()
        events = self.stamper.events
        end_ms = max((e.t_ms for e in events), default=0)
        events_sha = self.log.sha256
        outcome, flags, _source = judge_outcome(events, ctx.scenario.domain)
        pair = ctx.planned.pair
        header = EpisodeHeader(
            episode_id=ctx.planned.episode_id,
            run_id=ctx.run_id,
            pair_id=pair.pair_id,
            caller_id=ctx.planned.caller_id,
            side=ctx.planned.side,
            attempt=ctx.attempt,
            scenario_id=ctx.scenario.id,
            scenario_version=ctx.scenario.version,
            scenario_sha256=ctx.scenario.sha256,
            facts_sha256=ctx.scenario.facts_sha256,
            campaign_sha256=ctx.campaign.sha256,
            plan_sha256=ctx.plan_sha256,
            agent=ctx.agent.name,
            architecture=ctx.adapter.capabilities.architecture or ctx.agent.architecture,
            adapter=ctx.agent.adapter,
            condition=self.condition,
            contrast=pair.contrast,
            voice_index=pair.voice_index,
            speech=self.speech,
            seed=pair.seed,
            replicate=pair.replicate,
            run_batch=pair.run_batch,
            pacing=ctx.campaign.pacing,
            tts=ctx.tts_info,
            asr=ctx.asr_info,
            channel=self.channel_info,
            exposure=Exposure(
                protocol=caps.protocol,
                turn_based=caps.turn_based,
                streaming=caps.streaming,
                transcripts=caps.transcripts,
                tool_trace=caps.tool_trace,
                fact_provisioning=caps.fact_provisioning,
                input_encoding=caps.input_format.encoding,
                input_sample_rate=caps.input_format.sample_rate,
            ),
        )
        result = EpisodeOutcome(
            status=status,
            failure_kind=failure,
            termination=termination,
            terminal_outcome=outcome if status == "completed" else None,
            outcome_flags=flags,
            facts_sha256_seen=self.facts_seen,
            duration_ms=end_ms,
            turns=self.turn,
            n_events=len(events),
            events_sha256=events_sha,
            audio_file=f"episodes/{ctx.episode_dir.name}/{CALL_WAV}",
            audio_sample_rate=self.recorder.rate,
        )
        return EpisodeRecord(
            schema_version=SCHEMA_VERSION, header=header, outcome=result, finished_at=dt.datetime.now(dt.UTC)
        )
