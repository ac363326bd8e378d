"""Find TTS and ASR backends by name without importing heavy optional packages.

Built-ins are `module:attr` strings checked with `importlib.util.find_spec` before import, so a
missing optional package becomes a MissingBackendError carrying the exact pip command. Third
parties register through the entry-point groups `voice_audit.tts` / `voice_audit.asr`, or are
loaded directly from a `package.module:attr` string.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, cast

from harness.audio.types import ASRBackend, TTSBackend
from scenarios.errors import ConfigError, MissingBackendError


@dataclass(frozen=True)
class _Builtin:
    target: str
    requires: tuple[str, ...]
    extra: str


_TTS: dict[str, _Builtin] = {
    "espeak": _Builtin("harness.audio.espeak:EspeakBackend", ("espeakng_loader",), "offline"),
    "piper": _Builtin("harness.audio.piper_tts:PiperBackend", ("piper",), "piper"),
    "coqui": _Builtin("harness.audio.coqui_tts:CoquiBackend", ("TTS", "torch"), "coqui"),
    "openai": _Builtin("harness.audio.openai_compat:OpenAISpeechBackend", ("aiohttp",), "offline"),
    "recorded": _Builtin("harness.audio.recorded:RecordedBackend", ("soundfile",), "offline"),
    "neural": _Builtin("harness.audio.neural_tts:NeuralPiperBackend", ("piper", "onnxruntime"), "piper"),
}

_ASR: dict[str, _Builtin] = {
    "faster-whisper": _Builtin(
        "harness.audio.asr_faster_whisper:FasterWhisperBackend", ("faster_whisper",), "offline"
    ),
    "whisper": _Builtin("harness.audio.asr_whisper:WhisperBackend", ("whisper", "torch"), "whisper"),
    "pocketsphinx": _Builtin(
        "harness.audio.asr_pocketsphinx:PocketSphinxBackend", ("pocketsphinx",), "offline"
    ),
    "openai": _Builtin("harness.audio.openai_compat:OpenAITranscriptionBackend", ("aiohttp",), "offline"),
}

EXTRAS: dict[str, str] = {
    "offline": "faster-whisper, pocketsphinx",
    "whisper": "openai-whisper",
    "piper": "piper-tts",
    "coqui": "coqui-tts",
    "crepe": "torchcrepe",
}


def require(backend: str, modules: tuple[str, ...], extra: str) -> None:
    """Raise MissingBackendError unless every module can be imported (checked without importing)."""
    for mod in modules:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingBackendError(backend, extra, f"Python module '{mod}' not found")


def _load_target(target: str, kind: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{kind} backend '{target}' is not a registered name nor 'module:attr'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"cannot import {kind} backend module '{module_name}': {exc}",
            fix="install the package that provides it, or check the spelling",
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{kind} backend '{target}': module '{module_name}' has no '{attr}'") from None
    return obj


def _entry_points(group: str) -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=group)}


def _create(name: str, kind: str, builtins: dict[str, _Builtin], group: str, options: dict[str, Any]) -> Any:
    spec = builtins.get(name)
    if spec is not None:
        require(name, spec.requires, spec.extra)
        factory = _load_target(spec.target, kind)
    elif name in (eps := _entry_points(group)):
        factory = eps[name].load()
    elif ":" in name:
        factory = _load_target(name, kind)
    else:
        known = ", ".join(sorted(set(builtins) | set(eps)))
        raise ConfigError(
            f"unknown {kind} backend '{name}'", fix=f"use one of {known}, or 'package.module:attr'"
        )
    return factory(**options)


def create_tts(name: str, **options: Any) -> TTSBackend:
    """Build a TTS backend by registry name, entry point or 'module:attr'."""
    return cast(TTSBackend, _create(name, "TTS", _TTS, "voice_audit.tts", options))


def create_asr(name: str, **options: Any) -> ASRBackend:
    """Build an ASR backend by registry name, entry point or 'module:attr'."""
    return cast(ASRBackend, _create(name, "ASR", _ASR, "voice_audit.asr", options))


def tts_names() -> list[str]:
    return sorted(set(_TTS) | set(_entry_points("voice_audit.tts")))


def asr_names() -> list[str]:
    return sorted(set(_ASR) | set(_entry_points("voice_audit.asr")))
