"""The scripted fake: a tiny deterministic agent for testing the harness itself and for benchmarks
(not for audits).

`ScriptedAgent` answers by turn number with fixed lines and a tone burst standing in for speech,
so runtime tests and benchmarks measure the harness, not an agent's models.

Calibration of the analysis pipeline (tests/integration/test_calibration_pipeline.py) needs a cheap
agent with a *known* effect. Two options give it one, both off by default:

- `planted`: with the harness's `calibration_oracle` (the perfect condition detector, see
  `voice_audit.harness.adapter.utterance_key`), the agent says one extra line -- by default an extra identity
  challenge, so Auth(e) grows by exactly one -- with probability `p` once a caller turn is detected
  as the `target` condition. The only way the agent learns the condition is the oracle lookup of
  the exact audio bytes it received, as for the reference agents' knobs.
- `noise`: with probability `repair_p` per call, one "Sorry, could you repeat that?" turn,
  independent of the condition, so an A/A campaign has real random differences between the sides.
- `service_failure`: from the first caller turn detected (by the oracle) as the `target`
  condition, the agent stops serving: `silent` (it answers nothing again), `hang_up` or
  `disconnect`; the reference agents' knob of the same name, for cheap campaigns.

Both draws are seeded from (`seed`, the call id, the purpose), never from the condition.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from voice_audit.agents.fakes._shell import FakeAgent
from voice_audit.agents.fakes._signal import draw, tone
from voice_audit.agents.session import QueueSession
from voice_audit.harness.adapter import (
    CALIBRATION_ORACLE,
    AudioOut,
    CallInfo,
    ErrorOut,
    FactsSeenOut,
    HangupOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
    utterance_key,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.tools import ToolFixture

__all__ = [
    "EXTRA_CHALLENGE",
    "REFUND_SCRIPT",
    "REPAIR_LINE",
    "SERVICE_MODES",
    "Planted",
    "ScriptedAgent",
    "ServiceFailure",
    "ServiceMode",
    "scripted",
]

REFUND_SCRIPT: tuple[str, ...] = (
    "Thank you for calling. How can I help you today?",
    "I can help with that. What seems to be the problem?",
    "Before I look into it, can you confirm your full name and the zip code on the account?",
    "Thank you. Would you like me to refund the duplicate charge?",
    "I have issued a refund of twenty four dollars and ninety nine cents. Is there anything else?",
)


EXTRA_CHALLENGE = "For your security, can you also confirm your date of birth?"
REPAIR_LINE = "Sorry, could you repeat that?"


@dataclass(frozen=True)
class Planted:
    """An extra line for callers the oracle labels `axis` in `levels`, with probability `p`.

    `after` is the index in `lines` after which the extra line is said (default: after the first
    line that asks to confirm something, i.e. the identity challenge)."""

    axis: str
    levels: tuple[str, ...]
    p: float = 1.0
    line: str = EXTRA_CHALLENGE
    after: int | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, object]) -> Planted:
        target = raw.get("target")
        if not isinstance(target, Mapping) or "axis" not in target or "levels" not in target:
            raise ValueError("planted needs target: {axis: AXIS, levels: [LEVEL, ...]}")
        levels = target["levels"]
        if not isinstance(levels, (list, tuple)) or not levels:
            raise ValueError("planted target levels must be a non-empty list")
        p = float(raw.get("p", 1.0))  # type: ignore[arg-type]
        if not 0.0 <= p <= 1.0:
            raise ValueError("planted p must lie in [0, 1]")
        after = raw.get("after")
        return cls(
            axis=str(target["axis"]),
            levels=tuple(str(v) for v in levels),
            p=p,
            line=str(raw.get("line", EXTRA_CHALLENGE)),
            after=None if after is None else int(after),  # type: ignore[call-overload]
        )


ServiceMode = Literal["silent", "hang_up", "disconnect"]
SERVICE_MODES: tuple[str, ...] = ("silent", "hang_up", "disconnect")


@dataclass(frozen=True)
class ServiceFailure:
    """Stop serving callers the oracle labels `axis` in `levels` (see the module docstring)."""

    axis: str
    levels: tuple[str, ...]
    mode: ServiceMode = "silent"

    @classmethod
    def parse(cls, raw: Mapping[str, object]) -> ServiceFailure:
        planted = Planted.parse({"target": raw.get("target")})
        mode = raw.get("mode", "silent")
        if mode not in SERVICE_MODES:
            raise ValueError(f"service_failure mode must be one of {', '.join(SERVICE_MODES)}, not {mode!r}")
        return cls(planted.axis, planted.levels, mode)  # type: ignore[arg-type]


class _ScriptedSession(QueueSession):
    def __init__(self, agent: ScriptedAgent, call: CallInfo) -> None:
        super().__init__()
        self.agent = agent
        self.call = call
        self.turn = 0
        self.fixture = ToolFixture(call.facts)
        self.heard_bytes = 0
        self.lines = list(agent.lines)
        self.turn_audio = bytearray()
        self.detected: dict[str, str] = {}
        self.planted_decided = False
        self.planted_fired = False
        self.stopped = False
        if agent.noise_repair_p > 0 and draw(agent.seed, call.call_id, "noise_repair") < agent.noise_repair_p:
            self.lines.insert(min(1, len(self.lines)), REPAIR_LINE)
        self._respond(first=True)

    @property
    def oracle(self) -> Mapping[str, Mapping[str, str]] | None:
        """The call's oracle from the harness (calibration mode), else one given to the agent itself."""
        return self.call.oracle if self.call.oracle is not None else self.agent.oracle

    def _detect(self) -> None:
        """Calibration mode: look the turn's exact audio up in the oracle (sticky for the call)."""
        oracle = self.oracle
        if oracle is not None and self.turn_audio:
            found = oracle.get(utterance_key(bytes(self.turn_audio)))
            if found:
                self.detected.update({str(k): str(v) for k, v in found.items()})
        self.turn_audio = bytearray()
        planted = self.agent.planted
        if planted is None or self.planted_decided or self.detected.get(planted.axis) not in planted.levels:
            return
        self.planted_decided = True
        if draw(self.agent.seed, self.call.call_id, "planted") >= planted.p:
            return
        self.planted_fired = True
        at = planted.after
        if at is None:
            at = next((i for i, ln in enumerate(self.lines) if "confirm" in ln.lower()), self.turn - 1)
        self.lines.insert(max(at + 1, self.turn), planted.line)

    def _stop_serving(self) -> bool:
        """The `service_failure` option: once the target is detected, never serve this call again."""
        knob = self.agent.service_failure
        if knob is None or self.detected.get(knob.axis) not in knob.levels:
            return False
        first, self.stopped = not self.stopped, True
        if knob.mode == "silent":
            self.queue.put_nowait(TurnEnd(compute_ms=0.0))
        elif first and knob.mode == "hang_up":
            self.queue.put_nowait(HangupOut("service_failure: hung up"))
            self.queue.put_nowait(None)
        elif first:
            self.queue.put_nowait(ErrorOut("disconnect", "service_failure: connection dropped", fatal=True))
            self.queue.put_nowait(None)
        return True

    def _respond(self, first: bool = False) -> None:
        t0 = time.perf_counter()
        lines = self.lines
        if first:
            self.queue.put_nowait(FactsSeenOut(self.call.facts_sha256))
        elif self._stop_serving():
            return
        if self.turn >= len(lines):
            self.queue.put_nowait(TextOut("Goodbye."))
            self.queue.put_nowait(HangupOut("conversation finished"))
            self.queue.put_nowait(None)
            return
        text = lines[self.turn]
        if (
            self.agent.use_tools
            and "refund" in text
            and "issued" in text
            and self.call.facts.charge is not None
        ):
            args = {"amount": str(self.call.facts.charge.amount)}
            self.queue.put_nowait(ToolCallOut(f"t{self.turn}", "issue_refund", args))
            res = self.fixture.call("issue_refund", args)
            self.queue.put_nowait(
                ToolResultOut(f"t{self.turn}", "issue_refund", res.ok, res.result_keys, res.error)
            )
        if self.agent.expose_text:
            self.queue.put_nowait(TextOut(text))
        if self.agent.speak:
            self.queue.put_nowait(AudioOut(self.agent.voice(text), 16000))
        elif self.agent.audio_ms:
            self.queue.put_nowait(AudioOut(self.agent.tone, 16000))
        self.queue.put_nowait(TurnEnd(compute_ms=(time.perf_counter() - t0) * 1000))
        self.turn += 1

    async def send_audio(self, chunk: bytes) -> None:
        self.heard_bytes += len(chunk)
        if self.oracle is not None:
            self.turn_audio += chunk

    async def end_turn(self) -> None:
        self._detect()
        if self.agent.think_ms:
            await asyncio.sleep(self.agent.think_ms / 1000)
        self._respond()


class ScriptedAgent(FakeAgent[_ScriptedSession]):
    """Says `lines` in order, one per caller turn, then hangs up. Exposes its text unless told not to."""

    name = "scripted"

    def __init__(
        self,
        lines: Sequence[str] = REFUND_SCRIPT,
        *,
        audio_ms: int = 400,
        expose_text: bool = True,
        use_tools: bool = True,
        speak: bool = False,
        oracle: Mapping[str, Mapping[str, str]] | None = None,
        calibration: bool = False,
        planted: Planted | None = None,
        noise_repair_p: float = 0.0,
        seed: int = 0,
        think_ms: int = 0,
        service_failure: ServiceFailure | None = None,
    ) -> None:
        if (planted is not None or service_failure is not None) and oracle is None and not calibration:
            raise ValueError(
                "a planted effect needs the calibration oracle (options: calibration_oracle: true)"
            )
        if not 0.0 <= noise_repair_p <= 1.0:
            raise ValueError("noise repair_p must lie in [0, 1]")
        self.oracle = oracle
        self.planted = planted
        self.service_failure = service_failure
        self.noise_repair_p = noise_repair_p
        self.seed = seed
        self.think_ms = think_ms
        self.lines = tuple(lines)
        self.speak = speak
        self._voiced: dict[str, bytes] = {}
        self.audio_ms = audio_ms
        self.tone = tone(audio_ms) if audio_ms else b""
        self.expose_text = expose_text
        self.use_tools = use_tools
        super().__init__(architecture="casc", transcripts=expose_text, tool_trace=use_tools)

    def voice(self, text: str) -> bytes:
        """The line spoken by eSpeak (en-us, 16 kHz), for transports that carry audio only."""
        if text not in self._voiced:
            from voice_audit.harness.audio import create_tts, resample
            from voice_audit.personas import SpeechParams

            synth = create_tts("espeak").synthesize(
                text, None, SpeechParams(voice="en-us", variant="m3", rate_wpm=170)
            )
            pcm, _ = resample(np.asarray(synth.pcm), synth.sample_rate, 16000)
            self._voiced[text] = np.asarray(pcm, dtype="<i2").tobytes()
        return self._voiced[text]

    def session(self, call: CallInfo) -> _ScriptedSession:
        return _ScriptedSession(self, call)


def scripted(spec: AgentSpec) -> ScriptedAgent:
    """Factory for campaigns: options lines, audio_ms, expose_text, use_tools, speak (real eSpeak
    audio), think_ms (wall time spent before each answer, as a slow backend would; not reported as
    compute, so accelerated-mode timing is unchanged), and for pipeline calibration `calibration_oracle: true`
    (each call's session then reads the harness's `CallInfo.oracle`),
    `planted: {target: {axis, levels}, p, line, after}`, `service_failure: {target: {axis, levels}, mode}`,
    `noise: {repair_p}` and `seed`."""
    opts = spec.options
    calibration = opts.get(CALIBRATION_ORACLE, False)
    if not isinstance(calibration, bool):
        raise TypeError("calibration_oracle must be true or false (the harness gives each call its oracle)")
    planted_raw = opts.get("planted")
    noise = opts.get("noise") or {}
    if not isinstance(noise, Mapping):
        raise ValueError("noise must be a mapping like {repair_p: 0.3}")
    return ScriptedAgent(
        opts.get("lines", REFUND_SCRIPT),
        audio_ms=int(opts.get("audio_ms", 400)),
        expose_text=bool(opts.get("expose_text", True)),
        use_tools=bool(opts.get("use_tools", True)),
        speak=bool(opts.get("speak", False)),
        calibration=calibration,
        planted=Planted.parse(planted_raw) if isinstance(planted_raw, Mapping) else None,
        noise_repair_p=float(noise.get("repair_p", 0.0)),
        seed=int(opts.get("seed", 0)),
        think_ms=int(opts.get("think_ms", 0)),
        service_failure=ServiceFailure.parse(failure)
        if isinstance(failure := opts.get("service_failure"), Mapping)
        else None,
    )
