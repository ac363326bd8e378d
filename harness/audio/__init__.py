"""The audio layer: TTS and ASR behind Protocols, codec and channel simulation.

Importing this package loads nothing but this file: every name below is loaded from its submodule on
first use (PEP 562), and optional engines (faster-whisper, PocketSphinx, Piper, Coqui,
openai-whisper, aiohttp clients) are imported only when `create_tts` / `create_asr` builds them,
and a missing one raises MissingBackendError with the pip command that installs it.
`voice_audit.harness.audio.dsp`, `wer` and `errors` are pure modules that `analysis` may import on their own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names that are also submodule names are bound here, not lazily: importing the submodule
# (`voice_audit.harness.audio.wer`, `voice_audit.harness.audio.loudness`) would otherwise leave the module object where
# the function is expected. Both modules are pure and small.
from voice_audit.harness.audio.dsp import loudness
from voice_audit.harness.audio.wer import wer

if TYPE_CHECKING:
    from voice_audit.harness.audio.cache import ContentCache, content_key
    from voice_audit.harness.audio.channel import ChannelOutput, ChannelReport, TelephoneChannel
    from voice_audit.harness.audio.dsp import (
        NormalisedAudio,
        check_pcm,
        mulaw_decode,
        mulaw_encode,
        normalise,
        resample,
        to_float,
        to_int16,
    )
    from voice_audit.harness.audio.errors import (
        AudioError,
        BackendLoadError,
        EmptyTextError,
        InvalidAudioError,
        SynthesisError,
        TranscriptionError,
        UnknownVoiceError,
    )
    from voice_audit.harness.audio.flite_tts import FLITE_ACCENTS, flite_problem
    from voice_audit.harness.audio.recognizer import SpeechRecognizer
    from voice_audit.harness.audio.registry import asr_names, create_asr, create_tts, tts_names
    from voice_audit.harness.audio.speakers import realisation_speaker, speaker_gender
    from voice_audit.harness.audio.synth import SpeechSynthesizer
    from voice_audit.harness.audio.types import (
        ASRBackend,
        AsyncASRBackend,
        AsyncTTSBackend,
        Synthesis,
        Transcript,
        TTSBackend,
        Word,
    )
    from voice_audit.harness.audio.wer import normalise_words

_LAZY: dict[str, str] = {
    "ASRBackend": "voice_audit.harness.audio.types",
    "AsyncASRBackend": "voice_audit.harness.audio.types",
    "AsyncTTSBackend": "voice_audit.harness.audio.types",
    "AudioError": "voice_audit.harness.audio.errors",
    "BackendLoadError": "voice_audit.harness.audio.errors",
    "ChannelOutput": "voice_audit.harness.audio.channel",
    "ChannelReport": "voice_audit.harness.audio.channel",
    "ContentCache": "voice_audit.harness.audio.cache",
    "EmptyTextError": "voice_audit.harness.audio.errors",
    "FLITE_ACCENTS": "voice_audit.harness.audio.flite_tts",
    "InvalidAudioError": "voice_audit.harness.audio.errors",
    "NormalisedAudio": "voice_audit.harness.audio.dsp",
    "SpeechRecognizer": "voice_audit.harness.audio.recognizer",
    "SpeechSynthesizer": "voice_audit.harness.audio.synth",
    "Synthesis": "voice_audit.harness.audio.types",
    "SynthesisError": "voice_audit.harness.audio.errors",
    "TTSBackend": "voice_audit.harness.audio.types",
    "TelephoneChannel": "voice_audit.harness.audio.channel",
    "Transcript": "voice_audit.harness.audio.types",
    "TranscriptionError": "voice_audit.harness.audio.errors",
    "UnknownVoiceError": "voice_audit.harness.audio.errors",
    "Word": "voice_audit.harness.audio.types",
    "asr_names": "voice_audit.harness.audio.registry",
    "check_pcm": "voice_audit.harness.audio.dsp",
    "content_key": "voice_audit.harness.audio.cache",
    "create_asr": "voice_audit.harness.audio.registry",
    "create_tts": "voice_audit.harness.audio.registry",
    "flite_problem": "voice_audit.harness.audio.flite_tts",
    "mulaw_decode": "voice_audit.harness.audio.dsp",
    "mulaw_encode": "voice_audit.harness.audio.dsp",
    "normalise": "voice_audit.harness.audio.dsp",
    "normalise_words": "voice_audit.harness.audio.wer",
    "realisation_speaker": "voice_audit.harness.audio.speakers",
    "resample": "voice_audit.harness.audio.dsp",
    "speaker_gender": "voice_audit.harness.audio.speakers",
    "to_float": "voice_audit.harness.audio.dsp",
    "to_int16": "voice_audit.harness.audio.dsp",
    "tts_names": "voice_audit.harness.audio.registry",
}

__all__ = [
    "FLITE_ACCENTS",
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
    "flite_problem",
    "loudness",
    "mulaw_decode",
    "mulaw_encode",
    "normalise",
    "normalise_words",
    "realisation_speaker",
    "resample",
    "speaker_gender",
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
