"""The audio ends of the reference agents: thin wrappers over `voice_audit.harness.audio` (no engine here).

`AgentMouth` speaks policy lines with one fixed agent voice and returns 16 kHz PCM; `AgentEar`
transcribes a caller turn. Engines are shared per process and per configuration (`shared_*`), so
a campaign loads the Whisper model once however many calls and adapters it runs.

The compute a reference agent reports (`TurnEnd.compute_ms`, which advances the accelerated
virtual clock) is its engine work, priced from the content alone at each engine's nominal speed
(`ASR_COST`, `TTS_MS_PER_AUDIO_S`: figures measured on the project's reference machine, two cores,
as `LLMConfig`'s token costs are for a local model): recognition by utterance, audio and words
decoded (a Whisper decode that loops on repeated words costs what the loop costs), synthesis by the
seconds of speech produced. A measured wall time would add the machine's load, the other calls
queued on a shared engine and whether a cache was warm, none of which is the agent's; an
accelerated call's timing must be the same whoever ran it, beside whatever. The same content costs
the same for every agent and every call, so no knob agent looks faster than its twin for coming
later. A recorded prompt (the hold announcement) costs nothing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from voice_audit.harness.audio import SpeechRecognizer, SpeechSynthesizer, Transcript, resample
from voice_audit.personas import SpeechParams

AGENT_VOICE = SpeechParams(voice="en-us", rate_wpm=165, pitch=50, pitch_range=50)
"""The one agent voice: General American, default variant, neutral rate (most intelligible to ASR)."""

OUTPUT_RATE = 16000
LINE_GAP_MS = 200

ASR_COST: dict[str, tuple[float, float, float]] = {
    "faster-whisper": (250.0, 0.0, 35.0),
    "whisper": (500.0, 0.0, 70.0),
    "pocketsphinx": (0.0, 760.0, 0.0),
}
"""Recognition per backend: (ms per utterance, ms per second of audio, ms per word decoded). Whisper
encodes a padded window whatever the utterance's length and decodes word by word (tiny.en about
0.6 s for a ten-word turn; base twice that); PocketSphinx searches the audio frame by frame."""
DEFAULT_ASR_COST = ASR_COST["faster-whisper"]
TTS_MS_PER_AUDIO_S: dict[str, float] = {"espeak": 3.0, "flite": 5.0, "piper": 230.0}
"""Synthesis per backend: ms per second of speech produced (eSpeak NG in process, Flite, Piper)."""
DEFAULT_TTS_MS_PER_AUDIO_S = 100.0
"""An engine without a figure of its own: a neural voice's order of magnitude."""

_lock = threading.Lock()
_synths: dict[str, SpeechSynthesizer] = {}
_ears: dict[str, SpeechRecognizer] = {}


def recognition_ms(transcript: Transcript, audio_s: float) -> float:
    """The nominal compute of recognising `audio_s` seconds into `transcript` (module docstring)."""
    per_utterance, per_second, per_word = ASR_COST.get(transcript.backend, DEFAULT_ASR_COST)
    return per_utterance + per_second * audio_s + per_word * len(transcript.text.split())


def synthesis_ms(backend: str, audio_s: float) -> float:
    """The nominal compute of synthesising `audio_s` seconds of speech (module docstring)."""
    return TTS_MS_PER_AUDIO_S.get(backend, DEFAULT_TTS_MS_PER_AUDIO_S) * audio_s


def _key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def shared_synthesizer(
    backend: str = "espeak", options: dict[str, Any] | None = None, pool_size: int = 0
) -> SpeechSynthesizer:
    """One synthesizer per (backend, options, pool size) in this process; pool 0 runs in a thread."""
    key = _key(backend, options or {}, pool_size)
    with _lock:
        if key not in _synths:
            _synths[key] = SpeechSynthesizer(backend, options=options, pool_size=pool_size)
        return _synths[key]


def shared_recognizer(
    backend: str = "faster-whisper", options: dict[str, Any] | None = None
) -> SpeechRecognizer:
    """One recogniser (one loaded model) per (backend, options) in this process."""
    key = _key(backend, options or {})
    with _lock:
        if key not in _ears:
            _ears[key] = SpeechRecognizer(backend, options=options)
        return _ears[key]


class AgentMouth:
    """Policy lines (and holds) -> one turn of agent audio, int16 at `rate`."""

    def __init__(
        self, synth: SpeechSynthesizer, voice: SpeechParams = AGENT_VOICE, rate: int = OUTPUT_RATE
    ) -> None:
        self.synth = synth
        self.voice = voice
        self.rate = rate
        self.engine_ms = 0.0
        """Synthesis compute since the last `take_engine_ms()` (see the module docstring)."""

    def take_engine_ms(self) -> float:
        ms, self.engine_ms = self.engine_ms, 0.0
        return ms

    async def _line(self, text: str, *, charge: bool = True) -> np.ndarray:
        syn = await self.synth.speak(text, None, self.voice)
        if charge:
            self.engine_ms += synthesis_ms(syn.backend, len(syn.pcm) / syn.sample_rate)
        pcm, _ = resample(syn.pcm, syn.sample_rate, self.rate)
        return np.asarray(pcm, dtype=np.int16)

    async def speak(self, parts: Sequence[str | np.ndarray]) -> np.ndarray:
        """`parts`: text lines, or rendered audio (a `hold`) placed like a line; lines are
        separated by `LINE_GAP_MS` of silence."""
        chunks: list[np.ndarray] = []
        gap = np.zeros(self.rate * LINE_GAP_MS // 1000, dtype=np.int16)
        for part in parts:
            pcm = await self._line(part) if isinstance(part, str) else np.asarray(part, dtype=np.int16)
            if chunks:
                chunks.append(gap)
            chunks.append(pcm)
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)

    async def hold(self, ms: int, announcement: str | None = None) -> tuple[np.ndarray, bool]:
        """A hold placed like a line among lines, so the turn gets exactly `ms` longer: the
        announcement padded with silence to `ms` minus one line gap. Returns the audio and whether
        the announcement fitted (it is dropped, leaving silence, when it is longer)."""
        n = max(0, self.rate * (ms - LINE_GAP_MS) // 1000)
        if announcement:
            pcm = await self._line(announcement, charge=False)
            if len(pcm) <= n:
                return np.concatenate([pcm, np.zeros(n - len(pcm), dtype=np.int16)]), True
        return np.zeros(n, dtype=np.int16), False


class AgentEar:
    """A caller turn -> what the agent's recogniser heard."""

    def __init__(self, recognizer: SpeechRecognizer) -> None:
        self.recognizer = recognizer

    async def hear(
        self, pcm: np.ndarray, sample_rate: int, prompt: str | None = None
    ) -> tuple[Transcript, float]:
        """The transcript and its compute in ms (see the module docstring); `prompt` biases the
        recogniser where its backend supports it."""
        transcript = await self.recognizer.transcribe(pcm, sample_rate, prompt=prompt)
        return transcript, recognition_ms(transcript, len(pcm) / sample_rate)
