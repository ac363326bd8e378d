"""Coqui TTS (`coqui-tts` / `TTS`) from a local model checkpoint and config; no weights ship in any wheel.

Coqui models take no pitch or rate parameters at synthesis time, so the persona's voice maps only
to a speaker name (multi-speaker models, via `speaker_map`) and rate is recorded, not applied.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from harness.audio.dsp import to_int16
from harness.audio.errors import BackendLoadError, EmptyTextError, SynthesisError
from harness.audio.registry import require
from harness.audio.types import Synthesis
from personas._model import SpeechParams


class CoquiBackend:
    name = "coqui"

    def __init__(
        self,
        model_path: str | Path,
        config_path: str | Path,
        *,
        speaker_map: dict[str, str] | None = None,
    ) -> None:
        require(self.name, ("TTS", "torch"), "coqui")
        self.model_path = Path(model_path)
        self.config_path = Path(config_path)
        for path in (self.model_path, self.config_path):
            if not path.exists():
                raise BackendLoadError(
                    f"coqui: {path} does not exist; pass a local model_path and config_path"
                )
        self.speaker_map = dict(speaker_map or {})
        self.version = f"coqui-tts {_dist_version()}; {self.model_path.name}"
        self._synth: Any = None
        self.sample_rate = 22050

    def _load(self) -> Any:
        if self._synth is None:
            from TTS.utils.synthesizer import Synthesizer

            try:
                self._synth = Synthesizer(
                    tts_checkpoint=str(self.model_path), tts_config_path=str(self.config_path)
                )
            except Exception as exc:
                raise BackendLoadError(f"coqui: cannot load {self.model_path}: {exc}") from exc
            self.sample_rate = int(self._synth.output_sample_rate)
        return self._synth

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        if not text.strip():
            raise EmptyTextError(f"coqui: empty text for voice {params.espeak_name}")
        synth = self._load()
        speaker = self.speaker_map.get(params.espeak_name, self.speaker_map.get(params.voice))
        try:
            wav = synth.tts(text, speaker_name=speaker) if speaker else synth.tts(text)
        except Exception as exc:
            raise SynthesisError(f"coqui failed on {text[:40]!r}: {exc}") from exc
        audio = np.asarray(wav, dtype=np.float32)
        peak = float(np.max(np.abs(audio))) if audio.size else 0.0
        pcm = to_int16(audio / peak * 0.9 if peak > 1.0 else audio)
        return Synthesis(
            pcm=pcm,
            sample_rate=self.sample_rate,
            backend=self.name,
            backend_version=self.version,
            params={
                "model": self.model_path.name,
                "speaker": speaker,
                "persona_voice": params.espeak_name,
                "input": "text",
            },
        )


def _dist_version() -> str:
    for dist in ("coqui-tts", "TTS"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"
