"""A small scripted caller for whole in-process calls against the reference agents (tests only).

It decides with the harness's own caller policy and classifier (so phrasing mismatches between
agent and caller show up here), renders persona text, speaks it with the real TTS and sends 16 kHz
PCM turns. For the native agent, which exposes no text, it transcribes the agent's audio with the
real ASR, as the harness must.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.adapter import (
    CALLER_ACT,
    HUMAN_REQUEST_ACT,
    AgentAdapter,
    AgentEvent,
    AudioOut,
    CallInfo,
    HangupOut,
    HeardOut,
    StateOut,
    TextOut,
    ToolCallOut,
    TurnEnd,
)
from voice_audit.harness.audio import SpeechRecognizer, SpeechSynthesizer, resample
from voice_audit.harness.caller.policy import CallerPolicy
from voice_audit.personas import CallerCondition, load_catalogue, render_utterance, speech_params
from voice_audit.scenarios import BUNDLED_LIBRARY, Scenario, load_scenario_file

CATALOGUE = load_catalogue()


def scenario(name: str) -> Scenario:
    return load_scenario_file(Path(BUNDLED_LIBRARY) / f"{name}.yaml")


def condition(
    accent: str = "us_general",
    affect: str = "calm",
    disfluency: str = "none",
    voice_profile: str = "female_adult",
) -> CallerCondition:
    return CallerCondition(
        accent=accent, voice_profile=voice_profile, affect=affect, disfluency=disfluency, wording="plain"
    )


@dataclass
class CallLog:
    agent_turns: list[list[AgentEvent]] = field(default_factory=list)
    agent_text: list[str] = field(default_factory=list)
    classifications: list[str] = field(default_factory=list)
    caller_audio: list[bytes] = field(default_factory=list)
    caller_text: list[str] = field(default_factory=list)
    hangup: str | None = None
    terminal: str | None = None

    def events(self, kind: type[Any]) -> list[Any]:
        return [e for turn in self.agent_turns for e in turn if isinstance(e, kind)]

    def tools(self) -> list[str]:
        return [e.name for e in self.events(ToolCallOut)]

    def count(self, classification: str) -> int:
        return self.classifications.count(classification)

    def flags(self) -> set[str]:
        return {f for e in self.events(StateOut) for f in e.flags}

    def heard(self) -> list[HeardOut]:
        return self.events(HeardOut)


async def run_call(
    agent: AgentAdapter,
    scen: Scenario,
    cond: CallerCondition,
    synth: SpeechSynthesizer,
    asr: SpeechRecognizer | None = None,
    *,
    seed: int = 7,
    oracle: dict[str, dict[str, str]] | None = None,
    max_turns: int = 24,
) -> CallLog:
    """One whole call. `oracle`, when given, is filled as the calibration harness would fill it."""
    from voice_audit.agents.reference import utterance_key

    log = CallLog()
    policy = CallerPolicy(scen)
    params = speech_params(CATALOGUE, cond, 0)
    session = await agent.connect(CallInfo(facts=scen.facts, scenario_id=scen.id))
    events = session.events().__aiter__()
    said: dict[str, int] = {}
    for _ in range(max_turns):
        turn: list[AgentEvent] = []
        async for ev in _until_turn_end(events):
            turn.append(ev)
        log.agent_turns.append(turn)
        texts = [e.text for e in turn if isinstance(e, TextOut)]
        if texts or asr is None:
            text = " ".join(texts)
        else:
            audio = b"".join(e.pcm for e in turn if isinstance(e, AudioOut))
            rate = next((e.sample_rate for e in turn if isinstance(e, AudioOut)), 16000)
            pcm = np.frombuffer(audio, dtype=np.int16)
            text = (await asr.transcribe(pcm, rate)).text if len(pcm) else ""
        log.agent_text.append(text)
        hang = next((e for e in turn if isinstance(e, HangupOut)), None)
        if hang is not None:
            log.hangup = hang.reason
            log.classifications.append(policy.decide(text).classification)
            break
        decision = policy.decide(text)
        log.classifications.append(decision.classification)
        if decision.terminal:
            log.terminal = decision.terminal
        if decision.say is None or decision.hang_up:
            break
        key = f"{decision.say.kind}:{decision.say.anchor_id or decision.say.template}"
        count = said.get(key, 0)
        said[key] = count + 1
        utt = render_utterance(
            decision.say.template, scen.caller.slots, cond, CATALOGUE, seed=seed, key=f"{key}:{count}",
            framing=decision.say.framing and count == 0,
        )  # fmt: skip
        syn = await synth.speak(utt.text, utt.ssml, params)
        pcm16, _ = resample(np.asarray(syn.pcm), syn.sample_rate, 16000)
        wire = np.asarray(pcm16, dtype="<i2").tobytes()
        if oracle is not None:
            act = {CALLER_ACT: HUMAN_REQUEST_ACT} if decision.say.kind == "human_request" else {}
            oracle[utterance_key(wire)] = {**cond.model_dump(), **act}
        log.caller_audio.append(wire)
        log.caller_text.append(utt.text)
        await session.send_audio(wire)
        await session.end_turn()
    await session.close("test over")
    return log


async def _until_turn_end(events: Any) -> Any:
    async for ev in events:
        yield ev
        if isinstance(ev, TurnEnd):
            return
