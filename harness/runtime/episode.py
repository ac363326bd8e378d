"""One call, start to finish: the attempt lifecycle (connect, converse, judge, record, retry).

What happens during the call lives elsewhere: the call log (`calllog`) stamps and records, the
conversation loop (`conversation`) hears and decides, and the transport (`turnbased` or
`streaming`) carries the turns. A call that fails (timeout, disconnect, malformed frame, agent
error) still produces a record with its failure kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import traceback
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voice_audit.harness.adapter import (
    AgentAdapter,
    AgentError,
    AgentSession,
    CalibrationOracle,
    CallInfo,
    RateLimited,
)
from voice_audit.harness.audio import (
    AudioError,
    SpeechRecognizer,
    SpeechSynthesizer,
    TelephoneChannel,
    realisation_speaker,
    speaker_gender,
)
from voice_audit.harness.caller.policy import CallerPolicy
from voice_audit.harness.caller.readers import ReaderSet
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.model.campaign import AgentSpec, Campaign
from voice_audit.harness.model.episode import (
    BackendInfo,
    EpisodeHeader,
    EpisodeOutcome,
    EpisodeRecord,
    Exposure,
    Status,
)
from voice_audit.harness.model.failures import FailureKind, NonServiceFlag, non_service_flag
from voice_audit.harness.model.outcome import judge_outcome
from voice_audit.harness.model.secrets import Redactor
from voice_audit.harness.model.usage import UsageRecord
from voice_audit.harness.model.versioning import SCHEMA_VERSION
from voice_audit.harness.planning import PlannedEpisode
from voice_audit.harness.runlog import archive_attempt, audio_file, call_usage, call_wav, events_jsonl, run_of
from voice_audit.harness.runtime.callid import call_id
from voice_audit.harness.runtime.calllog import AgentReportedError, CallFailed, CallLog
from voice_audit.harness.runtime.clock import EpisodeClock, RealClock, TurnDeadline, VirtualClock
from voice_audit.harness.runtime.conversation import Conversation
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.ratelimit import MAX_RATE_LIMITED_ATTEMPTS, AgentGate, backoff_s
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.streaming import StreamingCall
from voice_audit.harness.runtime.turnbased import CALLER_GAP_MS, TurnBasedCall
from voice_audit.harness.runtime.voice import CallerVoice, SpokenCache
from voice_audit.harness.tools import ToolFixture
from voice_audit.personas import Catalogue, speech_params
from voice_audit.scenarios import Scenario

__all__ = [
    "CALLER_GAP_MS",
    "RETRYABLE",
    "EpisodeContext",
    "EpisodeRunner",
]

RETRYABLE: frozenset[str] = frozenset(
    {
        "connect_failed",
        "timeout_turn",
        "timeout_call",
        "disconnect",
        "malformed_frame",
        "protocol_error",
        "http_error",
        "agent_error",
    }
)
"""Failures of the agent or its transport; the harness's own (and cancellations) are never retried."""
RETRY_BACKOFF_S = 0.2
EVENT_HOLD_S = 1.0
"""Accelerated pacing: how long (wall time) a call's events may wait in memory before being written."""


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
    calibration: bool = False
    """Calibration mode: each call's session gets a `CalibrationOracle` labelling the caller's turns."""
    redactor: Redactor | None = None
    files: Executor | None = None
    """Where the episode's files are written (one writer thread per campaign); None: a default thread."""
    readers: ReaderSet | None = None
    """The campaign's readers of agent turns (rules, and a model reader beside them when configured)."""
    salt: bytes | None = None
    """The run folder's call-id salt, read once per run; None: read from the run folder."""
    gate: AgentGate | None = None
    """The agent's admission gate (its vendor limits, rate-limit pauses); None: no gate."""
    ticket: int = 0
    """The call's place in the run's call order: the gate admits smaller tickets first."""
    on_usage: Callable[[UsageRecord], None] | None = None
    """Receives the usage ledger line of every attempt, as it ends."""


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
        tts = ctx.campaign.tts_for(condition)
        self.speaker = realisation_speaker(tts.name, tts.options, self.speech) or None
        """Who voices this caller (the speaker, not the realisation, is analysis's unit of evidence)."""
        ch = ctx.campaign.channel
        channel = (
            TelephoneChannel(snr_db=ch.snr_db, packet_loss=ch.packet_loss, seed=pair.seed)
            if ch.telephone
            else None
        )
        self.voice = CallerVoice(
            ctx.synth,
            ctx.catalogue,
            condition,
            self.speech,
            dict(ctx.scenario.caller.slots),
            pair.seed,
            channel,
            caps.input_format,
            ctx.spoken_cache,
            text_seed=pair.text_seed,
        )
        self.recorder = CallRecorder(self.voice.line_rate)
        hold_s = EVENT_HOLD_S if pacing == "accelerated" else 0.0
        self.oracle = CalibrationOracle() if ctx.calibration else None
        channel_info: dict[str, Any] = {
            "telephone": ch.telephone,
            "snr_db": ch.snr_db,
            "packet_loss": ch.packet_loss,
        }
        self.log = CallLog(
            EventLog(events_jsonl(ctx.episode_dir), ctx.redactor, hold_s=hold_s),
            self.clock,
            self.recorder,
            condition,
            channel_info,
            self.oracle,
        )
        self.readers = ctx.readers.for_call(ctx.scenario) if ctx.readers is not None else None
        self.policy = CallerPolicy(ctx.scenario, reader=self.readers.policy_reader if self.readers else None)
        self.session: AgentSession | None = None
        self.rate_limited: RateLimited | None = None
        self.admitted_at: float | None = None
        """When the agent's gate admitted this attempt (wall clock); None: the agent declares no limits."""

    # -- the whole episode -----------------------------------------------------------
    async def run(self) -> EpisodeRecord:
        """The call, retried up to `campaign.retries` times after a retryable failure (agent-side
        failures too, though they are an outcome of the attempt: retries apply to both sides alike).

        Only the last attempt is returned (one record per episode in episodes.jsonl, with its
        `attempt` number); each earlier attempt is kept whole under `episodes/<id>/attempts/<n>/`
        (events.jsonl, call.wav) with its own record appended to `episodes/<id>/attempts.jsonl`.
        A resume that finds the episode unfinished drops the folder and starts again at attempt 0.
        """
        runner = self
        retried = limited = 0
        try:
            record = await self._gated_attempt(limited)
            while True:
                kind = record.outcome.failure_kind
                if kind == "rate_limited" and limited < MAX_RATE_LIMITED_ATTEMPTS - 1:
                    # the vendor's load, not the agent's treatment of this caller: the gate paused
                    # and this call kept its place; it is placed again once the pause is over
                    limited += 1
                    self.ctx.stats["rate_limited_attempts"] = (
                        self.ctx.stats.get("rate_limited_attempts", 0) + 1
                    )
                    wait = 0.0 if self.ctx.gate is not None else backoff_s(None, limited - 1)
                elif kind in RETRYABLE and retried < self.ctx.campaign.retries:
                    wait = min(RETRY_BACKOFF_S * 2**retried, 5.0)
                    retried += 1
                else:
                    return record
                await asyncio.to_thread(archive_attempt, self.ctx.episode_dir, record)
                await asyncio.sleep(wait)
                runner = EpisodeRunner(dataclasses.replace(self.ctx, attempt=record.header.attempt + 1))
                record = await runner._gated_attempt(limited)
        except BaseException:
            if self.ctx.gate is not None:
                await asyncio.shield(self.ctx.gate.forget(self.ctx.ticket))
            raise

    async def _gated_attempt(self, limited: int = 0) -> EpisodeRecord:
        """One attempt inside the agent's gate; its usage line reported as it ends. A rate-limited
        attempt that will be placed again pauses the gate (the vendor's Retry-After, else backoff)
        and holds its place before giving up its slot."""
        ctx = self.ctx
        if ctx.gate is None:
            record = await self._attempt()
        else:
            async with ctx.gate.slot(ctx.ticket) as admitted:
                self.admitted_at = admitted if ctx.gate.limited else None
                record = await self._attempt()
                if record.outcome.failure_kind == "rate_limited" and limited < MAX_RATE_LIMITED_ATTEMPTS - 1:
                    await ctx.gate.hold_place(ctx.ticket)
                    after = self.rate_limited.retry_after_s if self.rate_limited is not None else None
                    await ctx.gate.pause(backoff_s(after, limited))
            if self.log.pause_agent_s:
                await ctx.gate.pause(self.log.pause_agent_s)
        if ctx.on_usage is not None:
            ctx.on_usage(
                call_usage(
                    record,
                    self.log.events,
                    pair_id=ctx.planned.pair.pair_id,
                    tts_model=ctx.tts_info.name,
                    asr_model=(ctx.asr_info.model or ctx.asr_info.name) if ctx.asr_info else None,
                    asr_seconds=self.log.asr_seconds if ctx.asr is not None else None,
                )
            )
        return record

    async def _attempt(self) -> EpisodeRecord:
        ctx = self.ctx
        call = CallInfo(
            facts=ctx.scenario.facts,
            scenario_id=ctx.scenario.id,
            facts_sha256=ctx.scenario.facts_sha256,
            call_id=call_id(
                ctx.salt or run_of(ctx.episode_dir), ctx.run_id, ctx.planned.episode_id, ctx.attempt
            ),
            oracle=self.oracle,
            disclosure=ctx.campaign.facts_disclosure,
        )
        fixture = ToolFixture(ctx.scenario.facts)
        status: Status = "completed"
        failure: FailureKind | None = None
        termination = ""
        non_service: NonServiceFlag | None = None
        deadline: TurnDeadline | None = None
        try:
            async with asyncio.timeout(ctx.campaign.timeouts.call_s) as call_limit:
                deadline = TurnDeadline(call_limit)
                try:
                    termination = await self._connect_and_converse(call, fixture, deadline)
                finally:
                    deadline.close()
        except AgentError as exc:
            status, failure, termination = "failed", exc.kind, exc.message
            if exc.kind == "rate_limited":  # the vendor's load: the harness waits and calls again (`run`)
                limited = exc if isinstance(exc, RateLimited) else RateLimited(exc.message, source=exc.kind)
                self.rate_limited = limited
                self.log.emit(
                    "rate_limited",
                    source=limited.source,
                    retry_after_s=limited.retry_after_s,
                    message=exc.message,
                )
            non_service = non_service_flag(exc.kind)
            if non_service is None and isinstance(exc, AgentReportedError):
                # an error event that names a harness kind is still the agent's own
                non_service, failure = "agent_error_event", "agent_error"
            if non_service is not None:  # the agent did not serve the caller: an outcome, not missing data
                status = "completed"
        except TimeoutError:
            if deadline is not None and deadline.expired is not None:
                status, failure, termination = "failed", "timeout_turn", deadline.expired
            else:
                status, failure = "failed", "timeout_call"
                termination = f"call exceeded {ctx.campaign.timeouts.call_s:g} s"
        except asyncio.CancelledError:
            self.log.failure("cancelled", "campaign cancelled while the call was in progress")
            await self._close_session("cancelled")
            self.log.log.close()
            raise
        except (
            AudioError
        ) as exc:  # the caller's own voice or ears failed (a TTS endpoint down, a hung engine)
            status, failure, termination = "failed", "audio_error", f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a bug in the harness must not take the campaign down
            status, failure = "failed", "harness_error"
            termination = f"{type(exc).__name__}: {exc}"
            ctx.stats.setdefault("harness_errors", []).append(traceback.format_exc())
        if failure is not None:
            self.log.failure(failure, termination, non_service)
        await self._close_session(termination)
        record = self._finish(status, failure, termination)
        await asyncio.get_running_loop().run_in_executor(
            ctx.files, self._write_files, record.outcome.duration_ms
        )
        return record

    def _write_files(self, end_ms: int) -> None:
        """The call's files, off the event loop; the record is appended only after this returns."""
        self.log.log.close()
        self.recorder.write(call_wav(self.ctx.episode_dir), min_ms=end_ms)

    async def _connect_and_converse(
        self, call: CallInfo, fixture: ToolFixture, deadline: TurnDeadline
    ) -> str:
        ctx = self.ctx
        try:
            async with asyncio.timeout(ctx.campaign.timeouts.connect_s):
                self.session = await ctx.adapter.connect(call)
        except TimeoutError:
            raise CallFailed(
                "connect_failed", f"no session within {ctx.campaign.timeouts.connect_s:g} s"
            ) from None
        except AgentError:
            raise
        except Exception as exc:
            raise CallFailed("connect_failed", f"{type(exc).__name__}: {exc}") from exc
        session = self.session
        events = session.events().__aiter__()
        log = self.log
        caps = ctx.adapter.capabilities
        agent_session = getattr(session, "session_id", None) or None  # protocol sessions name theirs
        log.emit(
            "call_started",
            0,
            pacing=ctx.campaign.pacing,
            protocol=caps.protocol,
            call_id=call.call_id,
            agent_session_id=agent_session,
            admitted_at=self.admitted_at,
        )
        sent = disclose(call.facts, call.disclosure)
        log.emit(
            "facts_provisioned",
            sha256=call.facts_sha256,
            tools=fixture.available(),
            disclosure=sent.mode,
            disclosed=sent.fields,
            disclosed_sha256=sent.sha256,
        )
        patience = ctx.campaign.patience
        interruptions = ctx.campaign.interruptions
        conversation = Conversation(
            log,
            self.policy,
            self.voice,
            ctx.asr,
            patience,
            interruptions,
            self.readers,
            ctx.campaign.reader.measure_asr,
        )
        turn_s = ctx.campaign.timeouts.turn_s
        if caps.turn_based:
            transport = TurnBasedCall(
                log, session, events, deadline, turn_s, ctx.stats, patience.hang_up_after_s
            )
            return await conversation.run(transport)
        async with StreamingCall(
            log, session, events, caps.input_format, turn_s, ctx.stats, interruptions
        ) as streaming:
            return await conversation.run(streaming)

    async def _close_session(self, reason: str) -> None:
        if self.session is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await self.session.close(reason)

    def _finish(self, status: Status, failure: FailureKind | None, termination: str) -> EpisodeRecord:
        ctx = self.ctx
        caps = (
            getattr(self.session, "capabilities", None) or ctx.adapter.capabilities
        )  # what this call's agent declared
        self.log.flush()
        events = self.log.events
        end_ms = max((e.t_ms for e in events), default=0)
        events_sha = self.log.log.sha256
        outcome, flags, _source = judge_outcome(events, ctx.scenario.outcome_rules)
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
            speaker=self.speaker,
            speaker_gender=speaker_gender(self.speaker),
            seed=pair.seed,
            replicate=pair.replicate,
            run_batch=pair.run_batch,
            pacing=ctx.campaign.pacing,
            tts=ctx.tts_info,
            asr=ctx.asr_info,
            channel=self.log.channel_info,
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
            facts_sha256_seen=self.log.facts_seen,
            duration_ms=end_ms,
            turns=self.log.spoken,
            n_events=len(events),
            events_sha256=events_sha,
            audio_file=audio_file(ctx.episode_dir.name),
            audio_sample_rate=self.recorder.rate,
        )
        return EpisodeRecord(
            schema_version=SCHEMA_VERSION, header=header, outcome=result, finished_at=dt.datetime.now(dt.UTC)
        )
