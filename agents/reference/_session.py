"""The turn-based in-process session shared by the three reference agents.

It buffers caller audio until `end_turn()`, perceives the turn (architecture-specific), lets the
detector and the dialogue policy decide, runs the tools, speaks the reply, and queues the events
the architecture exposes. Failures inside a turn never escape: the turn ends with a non-fatal
`ErrorOut`, a spoken repair request and `TurnEnd`, as a real agent would recover.

Event order per turn: [HeardOut] [ToolCallOut ToolResultOut | StateOut | TextOut]* AudioOut
[HangupOut] TurnEnd; after a hang-up the iterator ends.

Served to an app that runs some tools itself (`voice_audit.agents.app_tools`), the session announces
each call of those tools as it is made, waits for the app's answer, and the policy goes on from
that answer (a synchronous policy then runs in a thread, so the loop can deliver the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from voice_audit.agents.app_tools import AppToolFixture, AppTools
from voice_audit.agents.reference._acoustics import AcousticFeatures, measure
from voice_audit.agents.reference._audio import AgentMouth
from voice_audit.agents.reference._knobs import ConditionDetector, ServiceFailure
from voice_audit.agents.reference._policy import (
    REPAIR,
    Hangup,
    Heard,
    Hold,
    SayStep,
    StateStep,
    Step,
    ToolStep,
)
from voice_audit.agents.session import QueueSession
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    CallInfo,
    ErrorOut,
    FactsSeenOut,
    HangupOut,
    HeardOut,
    StateOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
    UsageOut,
)
from voice_audit.harness.tools import ToolFixture, ToolOutcome

log = logging.getLogger(__name__)
INPUT_RATE = 16000


@dataclass(frozen=True)
class Perception:
    """One caller turn as perceived: the policy's input plus what produced it."""

    heard: Heard
    features: AcousticFeatures
    transcript: str | None = None
    """What the recogniser returned (None when it was not run, e.g. on silence)."""
    asr_ms: float = 0.0
    """Recognition compute (see `voice_audit.agents.reference._audio`)."""


Perceive = Callable[[np.ndarray, str | None], Awaitable[Perception]]
"""(caller audio, recogniser prompt) -> what the agent perceived."""


@dataclass(frozen=True)
class ArchitectureExposure:
    """What the architecture shows the harness (METHOD section 1)."""

    transcripts: bool
    tools: bool
    states: bool


_DTMF_WORDS = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six",
               "7": "seven", "8": "eight", "9": "nine", "*": "star", "#": "hash"}  # fmt: skip


class Policy(Protocol):
    """A call's dialogue: the rule policy answers at once, a model-driven one is awaited."""

    @property
    def ended(self) -> bool: ...

    def greet(self) -> list[Step]: ...

    def respond(
        self, heard: Heard, detected: Mapping[str, str] | None = None, *, asks_for_human: bool | None = None
    ) -> list[Step] | Awaitable[list[Step]]: ...

    def listening_context(self) -> str | None: ...


class TurnSession(QueueSession):
    def __init__(
        self,
        call: CallInfo,
        policy: Policy,
        mouth: AgentMouth,
        perceive: Perceive,
        detector: ConditionDetector,
        exposure: ArchitectureExposure,
        service_failure: ServiceFailure | None = None,
    ) -> None:
        super().__init__()
        self.call = call
        self.service_failure = service_failure
        self.failed_service: str | None = None
        self.seen: dict[str, str] = {}
        self.policy = policy
        self.mouth = mouth
        self.perceive = perceive
        self.detector = detector
        self.exposure = exposure
        self._buffer = bytearray()
        self._dtmf: list[str] = []
        self._task: asyncio.Task[None] | None = None
        self.barge_ins: list[int] = []
        self.perceptions: list[Perception] = []
        self._app: AppTools | None = None

    # ---- tools the app runs (`voice_audit.agents.app_tools.AppToolSession`) ----

    def use_app_tools(self, names: frozenset[str], timeout_s: float) -> bool:
        tools = getattr(self.policy, "tools", None)
        if not isinstance(tools, ToolFixture):
            return False
        if self._app is None:
            self._app = AppTools()
            self.policy.tools = AppToolFixture(  # type: ignore[attr-defined]
                facts=tools.facts,
                calls=tools.calls,
                app=self._app,
                loop=asyncio.get_running_loop(),
                announce=self._announce,
            )
        self._app.names, self._app.timeout_s = frozenset(names), timeout_s
        return True

    def app_tool_result(self, call_id: str, outcome: ToolOutcome | None) -> None:
        if self._app is not None:
            self._app.answer(call_id, outcome)

    def _announce(self, call: ToolCallOut) -> None:
        if not self._over:
            self.queue.put_nowait(call)

    # ---- lifecycle ----

    async def start(self) -> None:
        """Queue the greeting turn (the agent speaks first)."""
        try:
            events = await self._render(self.policy.greet())
        except Exception as exc:
            raise AgentError("agent_error", f"reference agent could not speak its greeting: {exc}") from exc
        self._emit([FactsSeenOut(self.call.facts_sha256), *events])

    async def send_audio(self, chunk: bytes) -> None:
        if not self._over:
            self._buffer.extend(chunk)

    async def end_turn(self) -> None:
        if self._over:
            return
        if self._task is not None and not self._task.done():
            await self._task
        audio, self._buffer = bytes(self._buffer), bytearray()
        digits, self._dtmf = self._dtmf, []
        self._task = asyncio.get_running_loop().create_task(self._turn(audio, digits))

    async def typed_turn(self, text: str) -> None:
        """A caller turn typed, not spoken (`voice_audit.agents.typed_turns`): heard as written."""
        if self._over:
            return
        if self._task is not None and not self._task.done():
            await self._task
        self._buffer, self._dtmf = bytearray(), []
        self._task = asyncio.get_running_loop().create_task(self._turn(b"", [], typed=text))

    async def send_dtmf(self, digit: str) -> None:
        self._dtmf.append(digit)

    async def barge_in(self, played_ms: int) -> None:
        self.barge_ins.append(played_ms)

    async def close(self, reason: str) -> None:
        if self._app is not None:
            self._app.cancel_all()  # a policy thread waiting for the app goes on (and its turn is dropped)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self.end()

    # ---- one turn ----

    async def _turn(self, audio: bytes, digits: list[str], typed: str | None = None) -> None:
        asr_ms = 0.0
        try:
            pcm = np.frombuffer(audio[: len(audio) // 2 * 2], dtype=np.int16)
            if typed is not None:
                perception = Perception(Heard(typed, 1.0), measure(pcm, INPUT_RATE), typed)
            elif digits and not np.any(pcm):
                text = " ".join(_DTMF_WORDS.get(d, d) for d in digits)
                perception = Perception(Heard(text, 1.0), measure(pcm, INPUT_RATE), text)
            else:
                perception = await self.perceive(pcm, self.policy.listening_context())
            self.perceptions.append(perception)
            asr_ms = perception.asr_ms
            detected = self.detector.observe(audio, perception.features, perception.transcript)
            if self._stop_serving(detected, asr_ms):
                return
            asks = self.detector.asks_for_human(audio)
            events: list[AgentEvent] = []
            if self.exposure.transcripts and perception.transcript is not None:
                events.append(HeardOut(perception.transcript, perception.heard.confidence))
            if self._app is not None and self._app.names:
                for ev in events:  # what it heard comes before the tool calls it announces
                    self.queue.put_nowait(ev)
                events = []
            if (
                self._app is not None
                and self._app.names
                and not inspect.iscoroutinefunction(self.policy.respond)
            ):
                # a synchronous policy: its calls of the app's tools block this thread, not the loop
                reply = await asyncio.to_thread(
                    self.policy.respond, perception.heard, detected, asks_for_human=asks
                )
            else:
                reply = self.policy.respond(perception.heard, detected, asks_for_human=asks)
            steps = await reply if inspect.isawaitable(reply) else reply
            events += await self._render(steps)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a real agent recovers from its own faults mid-call
            log.exception("reference agent turn failed")
            events = [ErrorOut("agent_error", f"{type(exc).__name__}: {exc}", fatal=False)]
            with contextlib.suppress(Exception):
                events += await self._render([SayStep(REPAIR, "repair_request")])
        self._emit(events, asr_ms)

    def _stop_serving(self, detected: Mapping[str, str], asr_ms: float) -> bool:
        """The `service_failure` knob: once the target is detected, never serve this call again."""
        knob = self.service_failure
        for axis, level in detected.items():
            self.seen.setdefault(axis, level)
        if knob is None or (self.failed_service is None and not knob.target.matches(self.seen)):
            return False
        first = self.failed_service is None
        self.failed_service = knob.mode
        if knob.mode == "silent":
            self._emit([], asr_ms)
        elif first and knob.mode == "hang_up":
            self._emit([HangupOut("service_failure knob: hung up")], asr_ms)
        elif first:
            self._emit(
                [ErrorOut("disconnect", "service_failure knob: connection dropped", fatal=True)], asr_ms
            )
            self._over = True
            self.queue.put_nowait(None)
        return True

    async def _render(self, steps: list[Step]) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        spoken: list[str | np.ndarray] = []
        hangup: str | None = None
        for step in steps:
            if isinstance(step, SayStep):
                spoken.append(step.text)
                if self.exposure.transcripts:
                    events.append(TextOut(step.text))
            elif isinstance(step, Hold):
                pcm, announced = await self.mouth.hold(step.ms, step.announcement)
                if announced and step.announcement and self.exposure.transcripts:
                    events.append(TextOut(step.announcement))
                spoken.append(pcm)
            elif isinstance(step, ToolStep):
                o = step.outcome
                tools = getattr(self.policy, "tools", None)
                asked = tools.announced(o) if isinstance(tools, AppToolFixture) else None
                if asked is not None:  # announced when made; the app's answer is the result
                    if self.exposure.tools:
                        events.append(ToolResultOut(asked.call_id, step.name, o.ok, o.result_keys, o.error))
                elif self.exposure.tools:
                    events.append(ToolCallOut(step.call_id, step.name, dict(step.arguments)))
                    events.append(ToolResultOut(step.call_id, step.name, o.ok, o.result_keys, o.error))
            elif isinstance(step, StateStep):
                if self.exposure.states:
                    events.append(StateOut(step.from_state, step.to_state, step.flags))
            elif isinstance(step, Hangup):
                hangup = step.reason
        if spoken:
            pcm = await self.mouth.speak(spoken)
            if len(pcm):
                events.append(AudioOut(pcm.tobytes(), self.mouth.rate))
        if hangup is not None:
            events.append(HangupOut(hangup))
        return events

    def _emit(self, events: list[AgentEvent], asr_ms: float = 0.0) -> None:
        """Queue the turn; its compute is the engines' (see `voice_audit.agents.reference._audio`), so it does
        not depend on the plan order or on the load of a shared machine."""
        compute = asr_ms + self.mouth.take_engine_ms()
        take_model_ms = getattr(self.policy, "take_compute_ms", None)
        if callable(take_model_ms):
            compute += float(take_model_ms())
        take_usage = getattr(self.policy, "take_usage", None)
        usage = take_usage() if callable(take_usage) else None
        if self._over:
            return
        for ev in events:
            self.queue.put_nowait(ev)
        if usage:
            quantities, unknown = usage
            model = getattr(getattr(self.policy, "cfg", None), "label", None)
            self.queue.put_nowait(
                UsageOut(
                    quantities, source="llm", model=model if isinstance(model, str) else None, unknown=unknown
                )
            )
        self.queue.put_nowait(TurnEnd(compute_ms=compute))
        if self.policy.ended or any(isinstance(ev, HangupOut) for ev in events):
            self.queue.put_nowait(None)
