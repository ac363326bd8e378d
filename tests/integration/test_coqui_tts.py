"""Coqui TTS through our backend, on a tiny random VITS model the tests build and save as Coqui does.

The model speaks noise, but its duration predictor is pinned, so the exact length of the audio
is known: that checks the loader end to end (config sample rate, sentence splitting, Coqui's
padding) without any downloaded weights.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.collect_imports import skip_unless_installed
from tests.helpers.coqui_tiny import TinyVits, build_tiny_vits
from voice_audit.harness.audio import BackendLoadError, SpeechSynthesizer, create_tts
from voice_audit.personas import SpeechParams
from voice_audit.scenarios.errors import MissingBackendError

skip_unless_installed("TTS", reason="needs the coqui extra: pip install 'voice-audit[coqui]'")

VOICE = SpeechParams(voice="en-us", variant="f2")
ONE = "I would like to check my balance, please."
TWO = "I was charged twice. Can you refund me?"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyVits:
    return build_tiny_vits(tmp_path_factory.mktemp("coqui") / "run-1", seed=1)


def _one_line_naming(message: str, *parts: str) -> None:
    assert "\n" not in message, message
    assert "fix:" in message, message
    for part in parts:
        assert part in message, (part, message)


async def test_registry_path_loads_the_checkpoint_and_speaks_in_a_worker(tiny: TinyVits) -> None:
    options = {"model_path": str(tiny.checkpoint)}
    async with SpeechSynthesizer("coqui", options=options, pool_size=1) as synth:
        assert synth.backend.sample_rate == tiny.sample_rate
        s = await synth.speak(ONE, None, VOICE)
        again = await synth.speak(ONE, None, VOICE)
    assert s.pcm.dtype == np.int16 and s.pcm.ndim == 1 and s.sample_rate == 16000
    assert s.pcm.size == tiny.samples(ONE), (
        "one sentence: tokens x frames x hop, Coqui's trailing pad removed"
    )
    assert 0 < np.abs(s.pcm).max() <= 32767 and np.abs(s.pcm.astype(np.int32)).mean() > 10
    assert again.cached and np.array_equal(again.pcm, s.pcm)
    digest = hashlib.sha256(tiny.checkpoint.read_bytes()).hexdigest()
    assert s.params["model_path"] == str(tiny.checkpoint.resolve())
    assert s.params["model_sha256"] == digest
    assert s.params["config_sha256"] == hashlib.sha256(tiny.config.read_bytes()).hexdigest()
    assert s.backend == "coqui"
    assert s.backend_version.startswith(
        f"coqui-tts {metadata.version('coqui-tts')}; model.pth sha256:{digest[:16]}"
    )


def test_sentences_keep_their_pause_and_the_output_is_reproducible(tiny: TinyVits) -> None:
    import torch
    from TTS.utils.synthesizer import PAD_SILENCE_SAMPLES as PAD

    backend = create_tts("coqui", model_path=tiny.checkpoint, config_path=tiny.config)
    first, second = "I was charged twice.", "Can you refund me?"
    s = backend.synthesize(TWO, None, VOICE)
    assert s.pcm.size == tiny.samples(first) + PAD + tiny.samples(second)
    gap = s.pcm[tiny.samples(first) : tiny.samples(first) + PAD]
    assert not gap.any() and s.pcm[: tiny.samples(first)].any()
    assert s.duration_s == pytest.approx(s.pcm.size / 16000)

    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    again = create_tts("coqui", model_path=tiny.checkpoint).synthesize(TWO, None, VOICE)
    assert torch.equal(torch.rand(3), expected_next), "the caller's torch RNG must be left as it was"
    assert np.array_equal(again.pcm, s.pcm), (
        "VITS samples noise: the same request must still give the same audio"
    )
    other = backend.synthesize("Can you refund me today?", None, VOICE)
    assert other.pcm.size > tiny.samples(second) and other.params["seed"] != s.params["seed"]


def test_cache_keys_follow_the_model_file_content(tiny: TinyVits, tmp_path: Path) -> None:
    retrained = build_tiny_vits(tmp_path / "run-2", seed=2)
    assert retrained.checkpoint.name == tiny.checkpoint.name
    copy = tmp_path / "copy"
    shutil.copytree(tiny.checkpoint.parent, copy)

    def key(path: Path) -> str:
        return SpeechSynthesizer("coqui", options={"model_path": str(path)}, pool_size=0).key(
            ONE, None, VOICE
        )

    assert key(tiny.checkpoint) != key(retrained.checkpoint), "same file name, other weights"
    assert key(tiny.checkpoint) == key(copy / "model.pth"), "same bytes elsewhere: the cache stays shareable"
    a = create_tts("coqui", model_path=tiny.checkpoint).synthesize(ONE, None, VOICE)
    b = create_tts("coqui", model_path=retrained.checkpoint).synthesize(ONE, None, VOICE)
    assert a.pcm.size == b.pcm.size and not np.array_equal(a.pcm, b.pcm)

    shutil.copyfile(retrained.checkpoint, copy / "model.pth")
    assert key(copy / "model.pth") == key(retrained.checkpoint), (
        "a checkpoint rewritten in place is hashed again"
    )


def test_missing_or_corrupt_files_give_one_clear_line(tiny: TinyVits, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.pth"
    with pytest.raises(BackendLoadError) as info:
        create_tts("coqui", model_path=missing)
    _one_line_naming(str(info.value), str(missing), "model_path", "nothing is downloaded")

    truncated = tmp_path / "truncated"
    truncated.mkdir()
    data = tiny.checkpoint.read_bytes()
    (truncated / "model.pth").write_bytes(data[: len(data) // 2])
    shutil.copyfile(tiny.config, truncated / "config.json")
    with pytest.raises(BackendLoadError) as info:
        create_tts("coqui", model_path=truncated / "model.pth")
    _one_line_naming(str(info.value), str(truncated / "model.pth"), "truncated or corrupt")

    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copyfile(tiny.checkpoint, lonely / "model.pth")
    with pytest.raises(BackendLoadError) as info:
        create_tts("coqui", model_path=lonely / "model.pth")
    _one_line_naming(str(info.value), str(lonely / "config.json"), "config_path")

    (lonely / "config.json").write_text('{"model": "vits", "audio": ')
    with pytest.raises(BackendLoadError) as info:
        create_tts("coqui", model_path=lonely / "model.pth")
    _one_line_naming(str(info.value), str(lonely / "config.json"), "not valid JSON")


def test_a_config_that_does_not_fit_the_checkpoint_fails_at_load_in_one_line(
    tiny: TinyVits, tmp_path: Path
) -> None:
    config = tiny.config.read_text().replace('"hidden_channels": 16', '"hidden_channels": 24')
    assert config != tiny.config.read_text()
    (tmp_path / "other.json").write_text(config)
    backend = create_tts("coqui", model_path=tiny.checkpoint, config_path=tmp_path / "other.json")
    with pytest.raises(BackendLoadError) as info:
        backend.synthesize(ONE, None, VOICE)
    _one_line_naming(str(info.value), str(tiny.checkpoint), str(tmp_path / "other.json"), "size mismatch")


@pytest.mark.parametrize("module", ["TTS", "torchaudio", "torchcodec"])
def test_missing_engine_names_the_coqui_extra(
    monkeypatch: pytest.MonkeyPatch, tiny: TinyVits, module: str
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == module else real(m, *a))
    with pytest.raises(MissingBackendError, match=r"pip install 'voice-audit\[coqui\]'"):
        create_tts("coqui", model_path=tiny.checkpoint)


def test_persona_rate_scales_every_token_through_the_models_length_scale(tiny: TinyVits) -> None:
    """frames per token = ceil(exp(logw) * length_scale); the tiny model's exp(logw) is fpt - 0.5."""
    backend = create_tts("coqui", model_path=tiny.checkpoint)
    natural = (tiny.frames_per_token - 0.5) * 1.0
    for rate in (165, 330, 110):
        s = backend.synthesize(ONE, None, SpeechParams(voice="en-us", variant="f2", rate_wpm=rate))
        scale = 165 / rate
        assert s.params["length_scale"] == pytest.approx(scale)
        assert s.params["rate_wpm_requested"] == rate and s.params["reference_wpm"] == 165
        assert s.pcm.size == tiny.tokens(ONE) * int(np.ceil(natural * scale)) * 256
    assert backend.synthesize(ONE, None, VOICE).pcm.size == tiny.samples(ONE), (
        "the model's own scale is restored"
    )
    slow_ref = create_tts("coqui", model_path=tiny.checkpoint, reference_wpm=330)
    assert slow_ref.synthesize(ONE, None, VOICE).params["length_scale"] == pytest.approx(2.0)
    with pytest.raises(BackendLoadError, match="reference_wpm"):
        create_tts("coqui", model_path=tiny.checkpoint, reference_wpm=5)
