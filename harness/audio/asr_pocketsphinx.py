"""PocketSphinx: fast, low-accuracy recognition with the English model inside the wheel.

Used for stress tests and for keyword spotting in the native reference agent. Its word
posteriors are uncalibrated (measured: all 1.0 on eSpeak speech), so `confidence` is None rather
than a number that would look meaningful.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.audio.dsp import check_pcm, resample, to_int16
from voice_audit.harness.audio.errors import TranscriptionError
from voice_audit.harness.audio.registry import require
from voice_audit.harness.audio.types import Transcript, Word

SPHINX_RATE = 16000
FRAME_S = 0.01
_NON_WORDS = {"<s>", "</s>", "<sil>", "[NOISE]", "[SPEECH]"}


def _decoder(**config: Any) -> Any:
    require("pocketsphinx", ("pocketsphinx",), "offline")
    from pocketsphinx import Decoder

    return Decoder(loglevel="FATAL", samprate=SPHINX_RATE, **config)


def _pcm16k(pcm: np.ndarray, sample_rate: int) -> bytes:
    check_pcm(pcm, sample_rate, allow_silent=True, allow_clipped=True)
    audio, _ = resample(pcm if pcm.dtype == np.int16 else to_int16(pcm), sample_rate, SPHINX_RATE)
    return to_int16(audio).tobytes()


def _words(decoder: Any) -> list[Word]:
    words = []
    for seg in decoder.seg() or []:
        base = seg.word.split("(")[0]
        if base in _NON_WORDS or base.startswith("++"):
            continue
        words.append(Word(word=base, start_s=seg.start_frame * FRAME_S, end_s=(seg.end_frame + 1) * FRAME_S))
    return words


class PocketSphinxBackend:
    name = "pocketsphinx"
    requires = ("pocketsphinx",)

    def __init__(self, lm: str | None = None, dictionary: str | None = None) -> None:
        config: dict[str, Any] = {}
        if lm is not None:
            config["lm"] = lm
        if dictionary is not None:
            config["dict"] = dictionary
        self._decoder = _decoder(**config)
        self.model = f"cmusphinx en-us{' + ' + lm if lm else ''}"

    def transcribe(self, pcm: np.ndarray, sample_rate: int) -> Transcript:
        data = _pcm16k(pcm, sample_rate)
        try:
            self._decoder.start_utt()
            self._decoder.process_raw(data, full_utt=True)
            self._decoder.end_utt()
        except Exception as exc:
            raise TranscriptionError(f"{self.name} failed: {exc}") from exc
        hyp = self._decoder.hyp()
        return Transcript(
            text=hyp.hypstr if hyp is not None else "",
            words=tuple(_words(self._decoder)),
            confidence=None,
            backend=self.name,
            model=self.model,
            language="en",
            audio_seconds=len(data) / 2 / SPHINX_RATE,
        )


class KeywordSpotter:
    """Spot a fixed set of phrases in audio (PocketSphinx keyphrase search).

    `threshold` is the detection threshold exponent (1e-20 .. 1e-50: smaller finds more, with
    more false alarms); every phrase word must be in the CMU dictionary shipped with the model.
    """

    def __init__(self, phrases: Iterable[str], threshold: float = 1e-30) -> None:
        self.phrases = tuple(dict.fromkeys(p.lower().strip() for p in phrases if p.strip()))
        if not self.phrases:
            raise ValueError("KeywordSpotter needs at least one phrase")
        self._decoder = _decoder(lm=None)
        missing = [w for p in self.phrases for w in p.split() if not self._decoder.lookup_word(w)]
        if missing:
            raise ValueError(f"not in the PocketSphinx dictionary: {', '.join(sorted(set(missing)))}")
        with tempfile.TemporaryDirectory() as tmp:
            kws = Path(tmp) / "keywords.kws"
            kws.write_text("".join(f"{p} /{threshold:.0e}/\n" for p in self.phrases), encoding="utf-8")
            self._decoder.add_kws("keywords", str(kws))
        self._decoder.activate_search("keywords")

    def spot(self, pcm: np.ndarray, sample_rate: int) -> list[Word]:
        """Phrases heard, in time order, decoding the clip as one utterance.

        Measured on eSpeak speech it misses many phrases (it found "cancel" but not "refund" in
        one test sentence): it is a cheap, noisy detector, as a native agent's would be.
        """
        data = _pcm16k(pcm, sample_rate)
        self._decoder.start_utt()
        self._decoder.process_raw(data, full_utt=True)
        self._decoder.end_utt()
        found = [
            Word(
                word=seg.word.strip(), start_s=seg.start_frame * FRAME_S, end_s=(seg.end_frame + 1) * FRAME_S
            )
            for seg in (self._decoder.seg() or [])
            if seg.word.strip() in self.phrases
        ]
        return sorted(found, key=lambda w: w.start_s)
