"""The audio layer: TTS and ASR behind Protocols, codec and channel simulation.

Importing this package is cheap: optional engines (faster-whisper, PocketSphinx, Piper, Coqui,
openai-whisper, aiohttp clients) are imported only when `create_tts` / `create_asr` builds them,
and a missing one raises MissingBackendError with the pip command that installs it.
`harness.audio.dsp` is pure signal code that `analysis` may import on its own.
"""

from harness.audio.cache import ContentCache, content_key
from harness.audio.channel import ChannelOutput, ChannelReport, TelephoneChannel
from harness.audio.dsp import (
    NormalisedAudio,
    check_pcm,
    loudness,
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
from harness.audio.wer import normalise_words, wer

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
