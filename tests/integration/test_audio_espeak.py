"""Real eSpeak NG: persona axes change the audio measurably; bad input and engine crashes are contained."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from voice_audit.analysis.audio.acoustics import praat_f0, timing
from voice_audit.harness.audio import (
    EmptyTextError,
    SpeechSynthesizer,
    SynthesisError,
    UnknownVoiceError,
    create_tts,
)
from voice_audit.harness.audio.dsp import normalise, rms_dbfs
from voice_audit.personas import SpeechParams

TEXT = "I would like to check the balance on my account, please."


@pytest.fixture(scope="module")
def tts():  # type: ignore[no-untyped-def]
    return create_tts("espeak")


def spectrum(pcm: np.ndarray, sr: int) -> np.ndarray:
    """Long-term average log spectrum (16 bands) of normalised audio: a crude voice fingerprint."""
    x = normalise(pcm, sr).pcm.astype(np.float64)
    n = 512
    frames = x[: x.size // n * n].reshape(-1, n)
    power = (np.abs(np.fft.rfft(frames * np.hanning(n), axis=1)) ** 2).mean(axis=0)[:256]
    return 10 * np.log10(power.reshape(16, 16).mean(axis=1) + 1e-9)


def test_synthesis_records_the_applied_parameters(tts) -> None:  # type: ignore[no-untyped-def]
    s = tts.synthesize(TEXT, None, SpeechParams(voice="en-gb", variant="f2", rate_wpm=180, word_gap_ms=25))
    assert s.sample_rate == 22050 and s.pcm.dtype == np.int16 and 1.5 < s.duration_s < 6
    assert s.params["voice"] == "en-gb+f2" and s.params["voice_file"] == "gmw/en+f2"
    assert s.params["rate_wpm"] == 180 and s.params["word_gap_ms"] == 20
    assert "espeak-ng 1." in s.backend_version


def test_accents_produce_measurably_different_audio(tts) -> None:  # type: ignore[no-untyped-def]
    voices = ["en-us", "en-gb-scotland", "es", "vi"]
    specs = {v: spectrum(*_pcm(tts, SpeechParams(voice=v, variant="m1"))) for v in voices}
    repeat = spectrum(*_pcm(tts, SpeechParams(voice="en-us", variant="m1")))
    noise_floor = np.sqrt(np.mean((repeat - specs["en-us"]) ** 2))
    for i, a in enumerate(voices):
        for b in voices[i + 1 :]:
            distance = np.sqrt(np.mean((specs[a] - specs[b]) ** 2))
            assert distance > max(1.0, 2 * noise_floor), (a, b, distance, noise_floor)


def test_variants_and_pitch_change_f0(tts) -> None:  # type: ignore[no-untyped-def]
    def median_f0(params: SpeechParams) -> float:
        return praat_f0(*_pcm(tts, params)).median_f0()

    low = median_f0(SpeechParams(voice="en-us", variant="m3", pitch=25))
    high = median_f0(SpeechParams(voice="en-us", variant="m3", pitch=75))
    female = median_f0(SpeechParams(voice="en-us", variant="f2", pitch=50))
    male = median_f0(SpeechParams(voice="en-us", variant="m3", pitch=50))
    assert high > low * 1.3
    assert female > male * 1.3


def test_rate_volume_and_breaks_act_on_the_audio(tts) -> None:  # type: ignore[no-untyped-def]
    slow = tts.synthesize(TEXT, None, SpeechParams(voice="en-us", rate_wpm=110))
    fast = tts.synthesize(TEXT, None, SpeechParams(voice="en-us", rate_wpm=260))
    assert slow.duration_s > fast.duration_s * 1.6
    soft = tts.synthesize(TEXT, None, SpeechParams(voice="en-us", volume=40))
    loud = tts.synthesize(TEXT, None, SpeechParams(voice="en-us", volume=160))
    assert rms_dbfs(loud.pcm) > rms_dbfs(soft.pcm) + 6
    plain = tts.synthesize("yes um I can", "<speak>yes um, I can</speak>", SpeechParams(voice="en-us"))
    paused = tts.synthesize(
        "yes um I can", '<speak>yes um,<break time="700ms"/> I can</speak>', SpeechParams(voice="en-us")
    )
    assert paused.params["input"] == "ssml"
    assert paused.duration_s > plain.duration_s + 0.5
    assert (
        timing(paused.pcm, paused.sample_rate).pause_total_s
        > timing(plain.pcm, plain.sample_rate).pause_total_s + 0.5
    )


def test_bad_input_gives_clear_errors(tts) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnknownVoiceError, match=r"no voice 'xx-nowhere'.*fix: use an eSpeak NG voice"):
        tts.synthesize(TEXT, None, SpeechParams(voice="xx-nowhere"))
    with pytest.raises(UnknownVoiceError, match=r"en-us\+zz9.*variant"):
        tts.synthesize(TEXT, None, SpeechParams(voice="en-us", variant="zz9"))
    for text in ("", "   ", "...", "<speak> </speak>"):
        with pytest.raises(EmptyTextError):
            tts.synthesize(text, None, SpeechParams(voice="en-us"))


def _pcm(tts, params: SpeechParams) -> tuple[np.ndarray, int]:  # type: ignore[no-untyped-def]
    s = tts.synthesize(TEXT, None, params)
    return s.pcm, s.sample_rate


async def test_process_pool_speaks_and_reports_unknown_voice() -> None:
    async with SpeechSynthesizer("espeak", pool_size=2, options={"match_rate": False}) as synth:
        assert synth.uses_pool
        a = await synth.speak(TEXT, None, SpeechParams(voice="en-gb-scotland", variant="f2"))
        assert a.duration_s > 1 and a.params["voice"] == "en-gb-scotland+f2"
        with pytest.raises(UnknownVoiceError, match="xx-nowhere"):
            await synth.speak(TEXT, None, SpeechParams(voice="xx-nowhere"))
        b = await synth.speak(TEXT, None, SpeechParams(voice="en-gb-scotland", variant="f2"))
        assert b.cached and synth.synthesized == 2


async def test_engine_crash_is_an_error_not_a_dead_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "crashing_tts.py").write_text(
        textwrap.dedent(
            """
            import os
            from voice_audit.harness.audio.espeak import EspeakBackend

            class CrashOnBoom(EspeakBackend):
                def synthesize(self, text, ssml, params):
                    if "boom" in text:
                        os._exit(3)
                    return super().synthesize(text, ssml, params)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    async with SpeechSynthesizer("crashing_tts:CrashOnBoom", pool_size=1) as synth:
        with pytest.raises(SynthesisError, match=r"crashed while speaking voice en-us\+m1.*restarted"):
            await synth.speak("boom", None, SpeechParams(voice="en-us", variant="m1"))
        after = await synth.speak("still alive", None, SpeechParams(voice="en-us"))
        assert after.duration_s > 0.3
