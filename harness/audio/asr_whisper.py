"""openai-whisper (PyTorch): a model by name (downloaded on a user's machine as usual) or a local checkpoint.

Decoding matches the faster-whisper backend: greedy at temperature 0 with no fallback, no
conditioning on previous text, fp32 on CPU, and `sample_len` capped by the audio length so a
looping decode stops. Audio is passed as float32 at 16 kHz (a path would need the ffmpeg binary).
Confidence is exp(duration-weighted mean `avg_logprob`), as for faster-whisper.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.audio.dsp import check_pcm, resample, to_float
from voice_audit.harness.audio.errors import BackendLoadError, TranscriptionError
from voice_audit.harness.audio.registry import require
from voice_audit.harness.audio.types import Transcript, Word

WHISPER_RATE = 16000
MAX_SAMPLE_LEN = 224


class WhisperBackend:
    name = "whisper"
    requires = ("whisper", "torch")

    def __init__(
        self,
        model: str | Path = "tiny.en",
        *,
        download_root: str | None = None,
        language: str | None = "en",
        word_timestamps: bool = True,
        threads: int | None = None,
    ) -> None:
        require(self.name, ("whisper", "torch"), "whisper")
        import torch
        import whisper

        if threads is not None:
            torch.set_num_threads(threads)
        is_path = Path(model).suffix in {".pt", ".pth"} or Path(model).exists()
        if is_path and not Path(model).is_file():
            raise BackendLoadError(f"whisper: no checkpoint file at {model}")
        try:
            self._model = whisper.load_model(str(model), device="cpu", download_root=download_root)
        except Exception as exc:
            raise BackendLoadError(
                f"whisper: cannot load '{model}': {exc} (offline? pass a local checkpoint path, "
                "or use the faster-whisper backend with its offline model)"
            ) from exc
        self.model = Path(model).name if is_path else str(model)
        self.language = language
        self.word_timestamps = word_timestamps

    def decode_options(self, seconds: float) -> dict[str, Any]:
        return {
            "language": self.language,
            "temperature": 0.0,
            "beam_size": None,
            "best_of": None,
            "condition_on_previous_text": False,
            "fp16": False,
            "word_timestamps": self.word_timestamps,
            "sample_len": min(MAX_SAMPLE_LEN, max(32, math.ceil(seconds * 10))),
            "verbose": None,
        }

    def transcribe(self, pcm: np.ndarray, sample_rate: int) -> Transcript:
        check_pcm(pcm, sample_rate, allow_silent=True, allow_clipped=True)
        audio, _ = resample(to_float(pcm), sample_rate, WHISPER_RATE)
        audio = np.ascontiguousarray(audio, dtype=np.float32)
        seconds = audio.size / WHISPER_RATE
        try:
            result = self._model.transcribe(audio, **self.decode_options(seconds))
        except Exception as exc:
            raise TranscriptionError(f"{self.name} failed on {seconds:.2f} s of audio: {exc}") from exc
        segments = result.get("segments") or []
        words = tuple(
            Word(
                word=str(w["word"]).strip(),
                start_s=float(w["start"]),
                end_s=float(w["end"]),
                probability=float(w.get("probability", 0.0)),
            )
            for s in segments
            for w in s.get("words") or []
        )
        weight = sum(max(s["end"] - s["start"], 1e-3) for s in segments)
        confidence = (
            math.exp(sum(s["avg_logprob"] * max(s["end"] - s["start"], 1e-3) for s in segments) / weight)
            if segments
            else None
        )
        return Transcript(
            text=str(result.get("text", "")).strip(),
            words=words,
            confidence=min(1.0, confidence) if confidence is not None else None,
            backend=self.name,
            model=self.model,
            language=result.get("language"),
            audio_seconds=seconds,
        )
