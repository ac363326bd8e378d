"""The caller's mouth: persona text transforms, TTS, the telephone channel, the agent's input format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.adapter import AudioFormat
from harness.audio import SpeechSynthesizer, TelephoneChannel, mulaw_encode, resample
from harness.caller.policy import Say
from harness.runtime.recorder import RECORDING_RATE, to_recording_rate
from personas import CallerCondition, Catalogue, SpeechParams, render_utterance


@dataclass(frozen=True)
class Spoken:
    text: str
    wire: bytes
    pcm16k: np.ndarray
    duration_ms: int
    channel: dict[str, Any]


class CallerVoice:
    """Speaks for one caller. Channel noise is seeded by (pair seed, turn), so both sides get the same noise."""

    def __init__(
        self,
        synth: SpeechSynthesizer,
        catalogue: Catalogue,
        condition: CallerCondition,
        speech: SpeechParams,
        slots: dict[str, str],
        seed: int,
        channel: TelephoneChannel | None,
        target: AudioFormat,
    ) -> None:
        self.synth = synth
        self.catalogue = catalogue
        self.condition = condition
        self.speech = speech
        self.slots = slots
        self.seed = seed
        self.channel = channel
        self.target = target
        self._said: dict[str, int] = {}

    async def speak(self, say: Say, turn: int) -> Spoken:
        key = f"{say.kind}:{say.anchor_id or say.template}"
        count = self._said.get(key, 0)
        self._said[key] = count + 1
        utt = render_utterance(
            say.template,
            self.slots,
            self.condition,
            self.catalogue,
            seed=self.seed,
            key=f"{key}:{count}",
            framing=say.framing and count == 0,
        )
        synth = await self.synth.speak(utt.text, utt.ssml, self.speech)
        pcm, rate = np.asarray(synth.pcm), synth.sample_rate
        report: dict[str, Any] = {}
        if self.channel is not None:
            out = self.channel.apply(pcm, rate, seed=(self.seed + 7919 * turn) % (2**32))
            pcm, rate = np.asarray(out.pcm), out.sample_rate
            report = out.report.model_dump(mode="json")
        if self.target.encoding == "mulaw":
            narrow = pcm if rate == self.target.sample_rate else resample(pcm, rate, self.target.sample_rate)[0]
            wire = mulaw_encode(np.asarray(narrow, dtype=np.int16))
        else:
            at_rate = pcm if rate == self.target.sample_rate else resample(pcm, rate, self.target.sample_rate)[0]
            wire = np.asarray(at_rate, dtype="<i2").tobytes()
        pcm16k = to_recording_rate(pcm, rate)
        duration_ms = round(1000 * len(pcm16k) / RECORDING_RATE)
        return Spoken(utt.text, wire, pcm16k, duration_ms, report)
