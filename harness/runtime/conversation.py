"""The conversation loop every call shares: hear the agent, decide, reply, until someone hangs up.

Turn-based and streaming calls differ only in their transport (`Transport`: `next_turn` and
`say`); what the caller hears, decides and logs is the same code for both, its patience with a
silent agent included (`voice_audit.harness.caller.patience`): a silent turn is logged as `agent_silence`,
never read as words, and the caller prompts, asks for a human or hangs up by its patience. Its
patience with a repair loop reads every heard turn: too many unproductive exchanges in a row and
it asks for a human, then hangs up (`repair_loop`), each step a `caller_patience` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from voice_audit.harness.audio import SpeechRecognizer
from voice_audit.harness.caller.interruption import INTERRUPTION_LINE
from voice_audit.harness.caller.model_reader import ReaderError
from voice_audit.harness.caller.patience import (
    PATIENCE_PROMPT,
    CallerPatience,
    PatienceDecision,
    RepairLoopPatience,
)
from voice_audit.harness.caller.policy import CallerPolicy, Decision, Say
from voice_audit.harness.caller.readers import Readers
from voice_audit.harness.model.campaign import Interruptions, Patience
from voice_audit.harness.runtime.calllog import CallFailed, CallLog
from voice_audit.harness.runtime.voice import CallerVoice, Spoken
from voice_audit.scenarios.safety import REPAIR_LOOP_REASON


@dataclass
class AgentTurn:
    """One agent turn as the caller received it: its own words (when exposed), its audio at 16 kHz."""

    text: list[str] = field(default_factory=list)
    pcm16k: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int16))
    hung_up: str | None = None
    had_audio: bool = False
    barged: bool = False
    """The caller is to barge in now; the agent's turn goes on (its rest comes in the next turn)."""
    due_ms: int | None = None
    """For a silent turn: when the transport's quiet deadline fell (call clock), which a busy
    event loop may have acted on later; None: the silence ended when the turn came back."""

    @property
    def silent(self) -> bool:
        """Nothing from the agent: no words, no audio, no hang-up."""
        return not self.had_audio and not any(t.strip() for t in self.text) and self.hung_up is None


class Transport(Protocol):
    """How caller and agent turns travel: one class for turn-based agents, one for streaming ones."""

    async def next_turn(self, quiet_ms: int, give_up_ms: int) -> AgentTurn:
        """Wait for the agent's next turn, its hang-up, or its silence: a turn that has not begun
        within `quiet_ms` is silent; an agent still busy after `give_up_ms` has run out the
        caller's patience (a silent turn with the clock at that point)."""

    async def say(self, spoken: Spoken, say: Say, last: bool) -> None:
        """Speak one caller utterance; `last`: the caller hangs up after it."""


class Conversation:
    """The caller's side of one call over any transport."""

    def __init__(
        self,
        log: CallLog,
        policy: CallerPolicy,
        voice: CallerVoice,
        asr: SpeechRecognizer | None,
        patience: Patience | None = None,
        interruptions: Interruptions | None = None,
        readers: Readers | None = None,
        measure_asr: bool = False,
    ) -> None:
        self.log = log
        self.policy = policy
        self.voice = voice
        self.asr = asr
        self.readers = readers
        self.measure_asr = measure_asr
        self.patience = CallerPatience(patience if patience is not None else Patience())
        self.repair_patience = RepairLoopPatience(patience if patience is not None else Patience())
        self.interruption = (
            Say("interruption", INTERRUPTION_LINE[interruptions.reason])
            if interruptions is not None
            else None
        )

    async def hear(self, turn: AgentTurn) -> str:
        """The agent's words for the caller policy: its own text when exposed, else our ASR of its audio."""
        log = self.log
        if turn.text:
            text = " ".join(t.strip() for t in turn.text if t.strip())
            log.emit("agent_transcript", turn=log.turn, text=text, source="agent")
            if self.measure_asr and self.asr is not None and turn.had_audio and len(turn.pcm16k) >= 1600:
                log.asr_seconds += len(turn.pcm16k) / 16000
                heard = await self.asr.transcribe(turn.pcm16k, 16000)
                log.emit("asr_check", turn=log.turn, text=heard.text, confidence=heard.confidence)
            return text
        if not turn.had_audio or len(turn.pcm16k) < 1600:
            return ""
        if self.asr is None:
            raise CallFailed(
                "harness_error", "agent exposes no transcript and the campaign has no ASR backend"
            )
        log.asr_seconds += len(turn.pcm16k) / 16000
        tr = await self.asr.transcribe(turn.pcm16k, 16000)
        log.emit(
            "agent_transcript", turn=log.turn, text=tr.text, source="harness_asr", confidence=tr.confidence
        )
        return tr.text

    async def _next_turn(self, transport: Transport) -> AgentTurn:
        quiet, left = self.patience.wait_ms(self.log.now())
        turn = await transport.next_turn(quiet, left)
        if not turn.silent:
            now = self.log.now()
            end = min(now, self.log.playback.end_ms) if turn.had_audio else now
            self.patience.heard_agent(end)
        return turn

    async def _speak(self, transport: Transport, say: Say, last: bool) -> None:
        log = self.log
        log.turn += 1
        spoken = await self.voice.speak(say, log.turn)
        await transport.say(spoken, say, last)
        log.escalation_made(log.now())

    def _patience(self, now: int) -> PatienceDecision:
        log = self.log
        pd = self.patience.on_silence(now)
        log.emit(
            "caller_patience",
            turn=log.turn,
            action=pd.action,
            silence_ms=pd.silence_ms,
            prompts=pd.prompts,
            budget_ms=pd.budget_ms,
            reason=pd.reason,
        )
        return pd

    def _repair_patience(self, decision: Decision) -> PatienceDecision | None:
        """The caller's repair-loop patience on the turn it just read (its acting reader's reading)."""
        r = decision.reading
        return self.repair_patience.on_exchange(
            r.classification, r.act_names, ",".join(r.challenge_facts) or None
        )

    async def run(self, transport: Transport) -> str:
        """The call loop; returns the termination reason."""
        log = self.log
        self.patience.caller_spoke(log.now())  # the line is open: the agent is due from here
        turn = await self._next_turn(transport)
        while True:
            if turn.barged and self.interruption is not None:
                await self._speak(transport, self.interruption, False)
                turn = await self._next_turn(transport)
                continue
            if turn.silent:
                now = log.now()
                log.emit("agent_silence", turn=log.turn, silence_ms=self.patience.silence_at(now))
                # The caller decides as of when the silence was due (a streaming turn's quiet
                # deadline), not when a busy event loop got round to it: its prompts do not
                # depend on the harness's load.
                due = now if turn.due_ms is None else min(now, turn.due_ms)
                if self.policy.has_spoken or self.patience.exhausted(due):
                    pd = self._patience(due)
                    if pd.action == "hang_up":  # once its own last line has played out
                        log.emit(
                            "non_service",
                            max(now, log.caller_end_ms),
                            reason="agent_unresponsive",
                            message=pd.reason,
                        )
                        log.emit("hang_up", by="caller", reason="agent_unresponsive")
                        log.log.flush()
                        return f"caller hung up: agent_unresponsive ({pd.reason})"
                    if pd.action == "ask_human":
                        asked: Decision = self.policy.ask_for_human(pd.reason)
                        assert asked.say is not None
                        if asked.escalation:
                            log.escalation_pending(asked.escalation)
                        await self._speak(transport, asked.say, False)
                    else:
                        await self._speak(transport, Say("patience_prompt", PATIENCE_PROMPT), False)
                    turn = await self._next_turn(transport)
                    continue
            text = await self.hear(turn)
            second = None
            if self.readers is not None:
                try:
                    readings = await self.readers.read(text)
                except ReaderError as exc:
                    raise CallFailed("caller_error", str(exc)) from None
                second = readings.event_fields()
            decision = self.policy.decide(text)
            worn = None if decision.hang_up or turn.hung_up else self._repair_patience(decision)
            if worn is not None and worn.action == "hang_up":
                decision = Decision(
                    decision.reading, "hang_up", REPAIR_LOOP_REASON, hang_up=True, terminal="unresolved"
                )
            elif worn is not None and decision.action != "request_human":
                decision = self.policy.ask_for_human(worn.reason, "repairs", decision.reading)
            log.caller_decided(text, decision)
            if worn is not None:
                log.emit(
                    "caller_patience",
                    turn=log.turn,
                    action=worn.action,
                    silence_ms=0,
                    prompts=0,
                    budget_ms=0,
                    reason=worn.reason,
                    kind="repair_loop",
                    exchanges=worn.exchanges,
                )
            if second is not None:
                log.emit("caller_reading", turn=log.turn, **second)
            if turn.hung_up:
                if not decision.hang_up:  # the caller was not done: the agent left it unserved
                    log.emit("non_service", reason="agent_hung_up", message=turn.hung_up)
                log.emit("hang_up", by="agent", reason=turn.hung_up)
                return f"agent hung up: {turn.hung_up}"
            if decision.say is not None:
                await self._speak(transport, decision.say, decision.hang_up)
                self.patience.caller_spoke(max(log.now(), log.caller_end_ms))
            else:
                log.turn += 1
                log.escalation_made(log.now())
            if decision.hang_up:
                log.emit("hang_up", by="caller", reason=decision.reason)
                return f"caller hung up: {decision.reason}"
            turn = await self._next_turn(transport)
