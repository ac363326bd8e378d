"""Registry: names, module:attr, and MissingBackendError with the right extra."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from voice_audit.harness.audio import asr_names, create_asr, create_tts, tts_names
from voice_audit.harness.audio.espeak import EspeakBackend
from voice_audit.scenarios.errors import ConfigError, MissingBackendError


def test_builtin_names() -> None:
    assert {"espeak", "piper", "coqui", "openai"} <= set(tts_names())
    assert {"faster-whisper", "whisper", "pocketsphinx", "openai"} <= set(asr_names())


@pytest.mark.parametrize(
    ("kind", "name", "module", "extra"),
    [
        ("asr", "faster-whisper", "faster_whisper", "offline"),
        ("asr", "whisper", "whisper", "whisper"),
        ("asr", "pocketsphinx", "pocketsphinx", "offline"),
        ("tts", "piper", "piper", "piper"),
        ("tts", "coqui", "TTS", "coqui"),
    ],
)
def test_missing_backend_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, kind: str, name: str, module: str, extra: str
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == module else real(m, *a))
    with pytest.raises(MissingBackendError) as info:
        (create_asr if kind == "asr" else create_tts)(name)
    assert f"pip install 'voice-audit[{extra}]'" in str(info.value)
    assert info.value.extra == extra


def test_crepe_missing_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from voice_audit.analysis.audio.acoustics import crepe_f0

    monkeypatch.setitem(sys.modules, "torchcrepe", None)
    with pytest.raises(MissingBackendError, match=r"voice-audit\[crepe\]"):
        crepe_f0(np.ones(16000, np.int16) * 100, 16000)


def test_module_attr_and_unknown_names() -> None:
    backend = create_tts("voice_audit.harness.audio.espeak:EspeakBackend", use_ssml=False)
    assert backend.name == "espeak" and backend.use_ssml is False  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="unknown TTS backend 'nope'"):
        create_tts("nope")
    with pytest.raises(ConfigError, match="has no"):
        create_asr("voice_audit.harness.audio.asr_whisper:Nothing")
    with pytest.raises(ConfigError, match="cannot import"):
        create_asr("no_such_pkg.mod:X")


def test_espeak_text_and_ssml_input_never_share_a_cache_entry() -> None:
    """The synthesis cache keys on the backend's version: eSpeak reading a line's text and reading
    its SSML give different audio, so the two settings must not find each other's entries."""
    assert EspeakBackend(use_ssml=False).version != EspeakBackend(use_ssml=True).version
