"""TTS and ASR backends by name, from the one registry (`voice_audit.harness.registry`).

Built-ins are entry points of the groups `voice_audit.tts` / `voice_audit.asr` like any third
party's; a `package.module:attr` string loads a backend directly. A missing optional package is a
MissingBackendError carrying the exact pip command (backends check theirs with `require`).
"""

from __future__ import annotations

from typing import Any, cast

from voice_audit.harness.audio.types import ASRBackend, TTSBackend
from voice_audit.harness.registry import ASR_GROUP, TTS_GROUP, create, names, require

__all__ = ["asr_names", "create_asr", "create_tts", "require", "tts_names"]


def create_tts(name: str, **options: Any) -> TTSBackend:
    """Build a TTS backend by registered name or 'module:attr'."""
    return cast(TTSBackend, create(name, TTS_GROUP, **options))


def create_asr(name: str, **options: Any) -> ASRBackend:
    """Build an ASR backend by registered name or 'module:attr'."""
    return cast(ASRBackend, create(name, ASR_GROUP, **options))


def tts_names() -> list[str]:
    return names(TTS_GROUP)


def asr_names() -> list[str]:
    return names(ASR_GROUP)
