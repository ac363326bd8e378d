"""The engine compute a reference agent reports (what advances the accelerated clock) is priced from
the content, so it is the same on a busy machine, beside other calls and with a warm cache."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from voice_audit.agents.reference._audio import (
    ASR_COST,
    TTS_MS_PER_AUDIO_S,
    AgentEar,
    AgentMouth,
    recognition_ms,
)
from voice_audit.harness.audio import SpeechRecognizer, SpeechSynthesizer, Synthesis, Transcript
from voice_audit.personas import SpeechParams

RATE = 16000


class Recogniser:
    """Whisper by name; hears `words` words in every second of audio, after `delay_s` of "work"."""

    name = "faster-whisper"
    model = "tiny.en"

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def transcribe(self, pcm: np.ndarray, sample_rate: int) -> Transcript:
        time.sleep(self.delay_s)  # a loaded machine, or a shared engine busy with another call
        words = " ".join(["refund"] * round(len(pcm) / sample_rate * 3))
        return Transcript(text=words, backend=self.name, model=self.model)


class Voice:
    name = "espeak"
    version = "1"
    sample_rate = 22050

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        time.sleep(self.delay_s)
        pcm = np.full(len(text) * 1000, 500, dtype=np.int16)
        return Synthesis(
            pcm=pcm, sample_rate=self.sample_rate, backend=self.name, backend_version="1", params={}
        )


def _turns() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.integers(-9000, 9000, RATE * s // 2, dtype=np.int16) for s in (3, 5, 8, 4)]


async def _heard(delay_s: float, together: bool) -> list[float]:
    ear = AgentEar(SpeechRecognizer(Recogniser(delay_s)))  # one engine thread: calls queue on it
    if together:
        return [ms for _, ms in await asyncio.gather(*(ear.hear(t, RATE) for t in _turns()))]
    return [(await ear.hear(t, RATE))[1] for t in _turns()]


async def _spoken(delay_s: float) -> float:
    mouth = AgentMouth(SpeechSynthesizer(Voice(delay_s), pool_size=0))
    await mouth.speak(["I can see the duplicate charge.", "The refund is on its way."])
    return mouth.take_engine_ms()


async def test_recognition_costs_the_same_however_slow_or_shared_the_engine_ran() -> None:
    alone = await _heard(0.0, together=False)
    # each turn waited ~0.15 s of wall time per turn before it, queued behind the others
    assert await _heard(0.15, together=True) == alone
    per_utterance, per_second, per_word = ASR_COST["faster-whisper"]
    # priced from the content: 1.5 s of audio heard as 4 words (3 a second, rounded)
    assert alone[0] == per_utterance + 1.5 * per_second + 4 * per_word
    assert len(set(alone)) == 4  # each turn priced by its own length and words


async def test_synthesis_costs_the_same_however_slow_the_engine_ran() -> None:
    fast, slow = await _spoken(0.0), await _spoken(0.2)
    assert fast == slow
    seconds = (len("I can see the duplicate charge.") + len("The refund is on its way.")) * 1000 / 22050
    assert abs(fast - TTS_MS_PER_AUDIO_S["espeak"] * seconds) < 1e-6


def test_a_decode_that_loops_costs_what_the_loop_costs() -> None:
    """Whisper repeating itself on an accent it cannot read decodes many more words from the same
    audio: that cost is the engine's, and an accent that makes it loop makes the agent slower."""
    clean = Transcript(text="I was charged twice", backend="faster-whisper", model="tiny.en")
    looped = clean.model_copy(update={"text": " ".join(["charged twice"] * 20)})
    assert recognition_ms(looped, 2.0) - recognition_ms(clean, 2.0) == 36 * ASR_COST["faster-whisper"][2]
