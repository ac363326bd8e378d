"""Audio errors: each names what was wrong (voice, backend, audio problem) and how to fix it."""

from __future__ import annotations

from typing import Literal

from voice_audit.scenarios.errors import VoiceAuditError

AudioProblem = Literal[
    "empty", "too_short", "silent", "clipped", "wrong_rate", "not_mono", "bad_dtype", "non_finite"
]


class AudioError(VoiceAuditError):
    """Base of the audio layer's errors."""


class InvalidAudioError(AudioError):
    """Audio that cannot be measured or sent: `kind` says which problem, so callers can branch on it."""

    def __init__(self, kind: AudioProblem, message: str) -> None:
        self.kind: AudioProblem = kind
        self.detail = message
        super().__init__(f"{kind} audio: {message}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.kind, self.detail))


class UnknownVoiceError(AudioError):
    """The TTS backend has no such voice or variant."""

    def __init__(self, backend: str, voice: str, fix: str) -> None:
        self.backend = backend
        self.voice = voice
        self.fix = fix
        super().__init__(f"{backend} has no voice '{voice}' (fix: {fix})")

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        return (type(self), (self.backend, self.voice, self.fix))


class EmptyTextError(AudioError):
    """Nothing speakable was given to a TTS backend."""


class SynthesisError(AudioError):
    """The TTS engine failed or crashed while speaking; the parent process survives it."""


class TranscriptionError(AudioError):
    """The ASR backend failed on one input."""


class BackendLoadError(AudioError):
    """A backend is installed but its model could not be loaded (bad path, wrong format)."""
