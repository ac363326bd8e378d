"""What TTS and ASR backends return, and the Protocols they implement."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
from pydantic import Field

from voice_audit.harness.audio.dsp import MonoPcm
from voice_audit.personas import SpeechParams
from voice_audit.scenarios.base import Frozen

JSONScalar = str | int | float | bool | None


class Synthesis(MonoPcm):
    """One synthesised utterance: mono int16 PCM plus everything needed to reproduce it.

    `params` holds the exact parameters the backend applied (not just the requested ones), so the
    episode log can show what each caller actually sounded like.
    """

    sample_rate: int = Field(gt=0)
    backend: str
    backend_version: str
    params: dict[str, Any]
    cache_key: str = ""
    cached: bool = False


class Word(Frozen):
    word: str
    start_s: float
    end_s: float
    probability: float | None = None


class Transcript(Frozen):
    """What an ASR backend heard. `confidence` is in [0, 1] where the backend can give one (see each backend)."""

    text: str
    words: tuple[Word, ...] = ()
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    backend: str
    model: str
    language: str | None = None
    audio_seconds: float = 0.0
    cached: bool = False


@runtime_checkable
class TTSBackend(Protocol):
    """Text (or SSML) plus voice parameters -> speech. Implementations may ignore SSML they cannot render."""

    name: str
    version: str
    sample_rate: int

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis: ...


@runtime_checkable
class AsyncTTSBackend(Protocol):
    """A TTS backend that is I/O-bound (an HTTP service): the facade awaits it instead of using a pool."""

    name: str
    version: str
    sample_rate: int

    async def synthesize_async(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis: ...


@runtime_checkable
class ASRBackend(Protocol):
    name: str
    model: str

    def transcribe(self, pcm: np.ndarray, sample_rate: int) -> Transcript: ...


@runtime_checkable
class AsyncASRBackend(Protocol):
    name: str
    model: str

    async def transcribe_async(self, pcm: np.ndarray, sample_rate: int) -> Transcript: ...
