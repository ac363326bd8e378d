"""The audio layer: TTS and ASR behind Protocols, codec and channel simulation.

Importing this package loads nothing but this file: every name below is loaded from its submodule on
first use (PEP 562), and optional engines (faster-whisper, PocketSphinx, Piper, Coqui,
openai-whisper, aiohttp clients) are imported only when `create_tts` / `create_asr` builds them,
and a missing one raises MissingBackendError with the pip command that installs it.
`harness.audio.dsp`, `wer` and `errors` are pure modules that `analysis` may import on their own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names that are also submodule names are bound here, not lazily: importing the submodule
# (`harness.audio.wer`, `harness.audio.loudness`) would otherwise leave the module object where
# the function is expected. Both modules are pure and small.
from harness.audio.dsp import loudness
from harness.audio.wer import wer

if TYPE_CHECKING:
    from harness.audio.cache import ContentCache, content_key
    from harness.audio.channel import ChannelOutput, ChannelReport, TelephoneChannel
    from harness.audio.dsp import (
        NormalisedAudio,
        check_pcm,
        mulaw_decode,
        mulaw_encode,
        normalise,
        resample,
        to_float,
        to_int16,
    )
    from harness.audio.errors import (
        AudioError,
        BackendLoadError,
        EmptyTextError,
        InvalidAudioError,
        SynthesisError,
        TranscriptionError,
        UnknownVoiceError,
    )
    from harness.audio.recognizer import SpeechRecognizer
    from harness.audio.registry import asr_names, create_asr, create_tts, tts_names
    from harness.audio.synth import SpeechSynthesizer
    from harness.audio.types import (
        ASRBackend,
        AsyncASRBackend,
        AsyncTTSBackend,
        Synthesis,
        Transcript,
        TTSBackend,
        Word,
    )
    from harness.audio.wer import normalise_words

_LAZY: dict[str, str] = {
    "ASRBackend": "harness.audio.types",
    "AsyncASRBackend": "harness.audio.types",
    "AsyncTTSBackend": "harness.audio.types",
    "AudioError": "harness.audio.errors",
    "BackendLoadError": "harness.audio.errors",
    "ChannelOutput": "harness.audio.channel",
    "ChannelReport": "harness.audio.channel",
    "ContentCache": "harness.audio.cache",
    "EmptyTextError": "harness.audio.errors",
    "InvalidAudioError": "harness.audio.errors",
    "NormalisedAudio": "harness.audio.dsp",
    "SpeechRecognizer": "harness.audio.recognizer",
    "SpeechSynthesizer": "harness.audio.synth",
    "Synthesis": "harness.audio.types",
    "SynthesisError": "harness.audio.errors",
    "TTSBackend": "harness.audio.types",
    "TelephoneChannel": "harness.audio.channel",
    "Transcript": "harness.audio.types",
    "TranscriptionError": "harness.audio.errors",
    "UnknownVoiceError": "harness.audio.errors",
    "Word": "harness.audio.types",
    "asr_names": "harness.audio.registry",
    "check_pcm": "harness.audio.dsp",
    "content_key": "harness.audio.cache",
    "create_asr": "harness.audio.registry",
    "create_tts": "harness.audio.registry",
    "mulaw_decode": "harness.audio.dsp",
    "mulaw_encode": "harness.audio.dsp",
    "normalise": "harness.audio.dsp",
    "normalise_words": "harness.audio.wer",
    "resample": "harness.audio.dsp",
    "to_float": "harness.audio.dsp",
    "to_int16": "harness.audio.dsp",
    "tts_names": "harness.audio.registry",
}

__all__ = [
    "ASRBackend",
    "AsyncASRBackend",
    "AsyncTTSBackend",
    "AudioError",
    "BackendLoadError",
    "ChannelOutput",
    "ChannelReport",
    "ContentCache",
    "EmptyTextError",
    "InvalidAudioError",
    "NormalisedAudio",
    "SpeechRecognizer",
    "SpeechSynthesizer",
    "Synthesis",
    "SynthesisError",
    "TTSBackend",
    "TelephoneChannel",
    "Transcript",
    "TranscriptionError",
    "UnknownVoiceError",
    "Word",
    "asr_names",
    "check_pcm",
    "content_key",
    "create_asr",
    "create_tts",
    "loudness",
    "mulaw_decode",
    "mulaw_encode",
    "normalise",
    "normalise_words",
    "resample",
    "to_float",
    "to_int16",
    "tts_names",
    "wer",
]


def __getattr__(name: str) -> Any:
    """Load the submodule that defines `name` on first use, so importing one pure module (dsp, wer,
    errors) never loads the TTS pool, the recognisers or the registry."""
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
