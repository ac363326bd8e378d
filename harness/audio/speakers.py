"""Which person a backend's voice for a realisation is, known before any audio is made.

A campaign's `voices: N` asks for N different speakers per condition. Whether a backend can give
them depends on its voice selection: `voices: catalogue` draws distinct catalogued speakers
(`voice_audit.harness.audio.catalogue`); an explicit map names voice ids, and a catalogued voice id
is its catalogued speaker (Flite's `kal` and `kal16` are both `cmu-kal`); eSpeak renders each
variant as its own synthetic voice (no recorded person). `realisation_speaker` says it without
building the backend, so planning stays cheap and offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voice_audit.harness.audio.catalogue import Gender, catalogue_voice, catalogues, voice_entry
from voice_audit.harness.audio.errors import UnknownVoiceError
from voice_audit.harness.audio.flite_tts import DEFAULT_VOICES as FLITE_DEFAULTS
from voice_audit.harness.audio.voice_map import mapped_voice
from voice_audit.personas import SpeechParams

NO_VOICE = ""
"""The backend has no voice for the realisation: it would refuse it."""

CATALOGUE_DEFAULT = frozenset({"azure", "google", "festival"})
"""Backends whose voice selection is the catalogue unless a map is given."""

_SYNTHETIC = frozenset({"espeak"})


def realisation_speaker(backend: str, options: Mapping[str, Any], params: SpeechParams) -> str | None:
    """The speaker id `backend` (with `options`) gives `params`; NO_VOICE when it has no voice for
    it; None when the backend does not say who speaks (a custom backend, recordings, a model file)."""
    voices = options.get("voices")
    if backend in _SYNTHETIC:
        return f"espeak:{params.espeak_name}"
    if voices == "catalogue" or (voices is None and backend in CATALOGUE_DEFAULT):
        try:
            return catalogue_voice(backend, params).speaker
        except UnknownVoiceError:
            return NO_VOICE
    if backend == "flite" and voices is None:
        voices = FLITE_DEFAULTS
    if backend == "piper":
        return "piper-joe" if options.get("model_path") is None else f"piper:{options['model_path']}"
    if backend == "neural" and isinstance(voices, Mapping):
        name = voices.get(params.variant or "", voices.get("*"))
        if name is None:
            return NO_VOICE
        entry = voice_entry("neural", str(name))
        return entry.speaker if entry is not None else f"neural:{name}"
    if backend == "openai":
        table = options.get("voice_map")
        fixed = table if isinstance(table, Mapping) else {}
        return f"openai:{fixed.get(params.espeak_name, fixed.get(params.voice, params.voice))}"
    table = options.get("speaker_map") if backend == "coqui" else voices
    if not isinstance(table, Mapping):
        return None
    voice = mapped_voice(table, params)
    if voice is None:
        return NO_VOICE if backend in ("flite", "elevenlabs", "azure", "google", "festival") else None
    entry = voice_entry(backend, voice)
    return entry.speaker if entry is not None else f"{backend}:{voice}"


def speaker_gender(speaker: str | None) -> Gender | None:
    """The catalogued gender of a speaker id (any backend's catalogue: a person is one id across
    engines); None for a synthetic or uncatalogued voice."""
    if not speaker:
        return None
    for cat in catalogues().values():
        for v in cat.voices:
            if v.speaker == speaker:
                return v.gender
    return None


__all__ = ["CATALOGUE_DEFAULT", "NO_VOICE", "realisation_speaker", "speaker_gender"]
