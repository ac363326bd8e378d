"""The analysis audio pass: the one-pass loudness equals pyloudnorm, one
read per file gives the same codec and F0 measures as the per-gate functions, and the cache is used."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from scipy.signal import sosfilt

from voice_audit.analysis.audio import measures as audio_measures
from voice_audit.harness.audio.dsp import to_int16
from voice_audit.harness.audio.loudness import (
    _block_bounds,
    _k_weighting,
    block_energies,
    block_energies_compiled,
    gated_loudness,
    integrated_loudness,
)


def _speechlike(seconds: float, rate: int, seed: int) -> np.ndarray:
    """Bursts of harmonics with near-silent gaps, so both loudness gates matter."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    f0 = 110 + 40 * np.sin(2 * np.pi * 0.3 * t)
    voice = sum(np.sin(2 * np.pi * k * np.cumsum(f0) / rate) / k for k in range(1, 6))
    envelope = (np.sin(2 * np.pi * 0.7 * t) > -0.2).astype(float)
    return 0.2 * voice * envelope + rng.normal(0, 1e-4, t.size)


@pytest.mark.parametrize("rate", [8000, 16000, 44100])
@pytest.mark.parametrize("seconds", [0.4, 0.83, 7.3, 61.0])
def test_integrated_loudness_equals_pyloudnorm(rate: int, seconds: float) -> None:
    x = _speechlike(seconds, rate, seed=int(seconds * 10))
    expected = pyloudnorm.Meter(rate).integrated_loudness(x)
    assert abs(integrated_loudness(x, rate) - expected) < 0.01
    assert integrated_loudness(x, rate) == pytest.approx(expected, abs=1e-9)


def test_integrated_loudness_of_silence_and_gated_quiet_is_minus_inf() -> None:
    for x in (np.zeros(16000), np.full(16000, 1e-6)):
        assert pyloudnorm.Meter(16000).integrated_loudness(x) == -np.inf
        assert integrated_loudness(x, 16000) == -np.inf
    with pytest.raises(ValueError, match="block size"):
        integrated_loudness(np.zeros(100), 16000)


@pytest.mark.parametrize("rate", [8000, 16000, 44100])
@pytest.mark.parametrize("seconds", [0.4, 0.83, 7.3, 61.0])
def test_compiled_block_energies_equal_block_energies_and_pyloudnorm(rate: int, seconds: float) -> None:
    """Both channels in one compiled pass: each the blocks of `block_energies` (to rounding) and the
    loudness of pyloudnorm; int16 samples measured as `dsp.loudness` measures them."""
    a = _speechlike(seconds, rate, seed=int(seconds * 10))
    b = np.roll(_speechlike(seconds, rate, seed=int(seconds * 10) + 1), rate // 3) * 0.1
    for got, x in zip(block_energies_compiled([a, b], rate), (a, b), strict=True):
        ref = block_energies(x, rate)  # its running sum over the whole call loses ~1e-12 on long ones
        y = sosfilt(_k_weighting(rate), x)
        lower, upper = _block_bounds(x.size, rate)
        exact = np.array([np.sum(y[lo:hi] ** 2) for lo, hi in zip(lower, upper, strict=True)]) / (0.4 * rate)
        assert got.shape == ref.shape == exact.shape
        assert np.max(np.abs(got - exact)) <= 1e-13 * np.max(exact)
        assert np.max(np.abs(got - ref)) <= 1e-10 * np.max(ref)
        assert gated_loudness(got) == pytest.approx(pyloudnorm.Meter(rate).integrated_loudness(x), abs=1e-9)
    (one,) = block_energies_compiled([a.astype(np.float32)], rate)
    assert np.max(np.abs(one - block_energies(a.astype(np.float32), rate))) <= 1e-10 * np.max(one)
    pcm = np.clip(np.rint(a * 32768), -32768, 32767).astype(np.int16)
    (z,) = block_energies_compiled([pcm], rate)
    assert np.max(np.abs(z - block_energies(pcm.astype(np.float32) / 32768.0, rate))) <= 1e-10 * np.max(z)
    for gain in (0.7, 9.0, 60.0):  # 60: many samples saturate
        out = to_int16(a.astype(np.float32).astype(np.float64) * gain)
        (direct,) = block_energies_compiled([out], rate)
        (fused,) = block_energies_compiled([a.astype(np.float32)], rate, int16_gain=gain)
        assert np.array_equal(fused, direct)
    with pytest.raises(ValueError, match="block size"):
        block_energies_compiled([np.zeros(100)], 16000)
    with pytest.raises(ValueError, match="same length"):
        block_energies_compiled([a, a[:-1]], rate)


def test_compiled_block_energies_through_digital_silence() -> None:
    """Seconds of exact zeros between bursts (a call's silent channel): the recursion's tiny states
    are flushed there, and every block that holds sound keeps its value (to rounding)."""
    rate = 16000
    x = _speechlike(12.0, rate, seed=3)
    x[2 * rate : 7 * rate] = 0.0
    x[9 * rate :] = 0.0
    (got,) = block_energies_compiled([x.astype(np.float32)], rate)
    y = sosfilt(_k_weighting(rate), x.astype(np.float32).astype(np.float64))
    lower, upper = _block_bounds(x.size, rate)
    exact = np.array([np.sum(y[lo:hi] ** 2) for lo, hi in zip(lower, upper, strict=True)]) / (0.4 * rate)
    sound = exact > 1e-200
    assert (~sound).sum() > 5 and sound.sum() > 5
    assert np.max(np.abs(got[sound] - exact[sound]) / exact[sound]) < 1e-12
    assert np.all(got[~sound] < 1e-190)
    assert gated_loudness(got) == pytest.approx(
        pyloudnorm.Meter(rate).integrated_loudness(x.astype(np.float32).astype(np.float64)), abs=1e-9
    )


def _call(path: Path, seconds: float = 3.0, rate: int = 8000, seed: int = 1) -> None:
    caller = _speechlike(seconds, rate, seed=seed) * 0.5
    agent = np.roll(_speechlike(seconds, rate, seed=seed + 1), rate // 2)
    sf.write(path, np.stack([caller, agent], axis=1), rate, subtype="PCM_16")


def test_measure_files_agrees_with_the_per_gate_functions_and_caches(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "e").mkdir(parents=True)
    for seed, name in enumerate(("a", "b")):
        _call(run / "e" / f"{name}.wav", seed=10 * seed)
    (run / "e" / "bad.wav").write_bytes(b"not audio")
    params = audio_measures.AudioParams(
        rate=16000, channels=2, subtype="PCM_16", target_lufs=-23.0, lufs_tolerance=0.5, max_seconds=2.0
    )
    wanted = {"e/a.wav": (True, True), "e/b.wav": (True, False), "e/bad.wav": (True, False)}
    got, stats = audio_measures.measure_files(run, wanted, params, workers=1)
    assert stats == {"files": 3, "from_cache": 0, "measured": 3, "workers": 1}
    for rel in ("e/a.wav", "e/b.wav"):
        one = audio_measures.codec_check(run / rel, 16000, 2, "PCM_16", -23.0, 0.5)
        m = got[rel]
        assert m.codec_ok is one.ok is True and m.codec_detail == one.detail
        assert m.resampling_path == one.resampling_path and m.lufs_after == pytest.approx(
            one.lufs_after, abs=0.01
        )
        audio = audio_measures.agent_speech(run / rel, 2.0)
        assert audio is not None
        assert m.praat_median_hz == pytest.approx(audio_measures.praat_median(audio), rel=1e-3)
    r, voiced, _ = audio_measures.f0_pair_r(audio_measures.agent_speech(run / "e/a.wav", 2.0))  # type: ignore[arg-type]
    assert got["e/a.wav"].pair_r == pytest.approx(r, abs=1e-3) and got["e/a.wav"].pair_voiced_both == voiced
    assert got["e/b.wav"].pair_r is None and not got["e/b.wav"].has_pair
    assert got["e/bad.wav"].codec_ok is False and "unreadable" in str(got["e/bad.wav"].codec_detail)

    doc = json.loads((run / audio_measures.AUDIO_CACHE).read_text())
    assert doc["version"] == audio_measures.MEASURE_VERSION and len(doc["files"]) == 3
    again, stats2 = audio_measures.measure_files(run, wanted, params, workers=1)
    assert stats2["from_cache"] == 3 and again == got
    wider = {**wanted, "e/b.wav": (True, True)}  # a new measure on a cached file: only that file again
    _, stats3 = audio_measures.measure_files(run, wider, params, workers=1)
    assert stats3["measured"] == 1
    _call(run / "e" / "a.wav", seconds=2.5)  # new bytes: new hash, measured again
    _, stats4 = audio_measures.measure_files(run, wanted, params, workers=1)
    assert stats4["measured"] == 1
    other = params.model_copy(update={"target_lufs": -20.0})
    _, stats5 = audio_measures.measure_files(run, wanted, other, workers=1)
    assert stats5["measured"] == 3


def test_measure_files_in_a_process_pool_equals_in_process(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for i in range(4):
        _call(run / f"{i}.wav", seconds=2.0 + 0.3 * i)
    params = audio_measures.AudioParams(
        rate=16000, channels=2, subtype="PCM_16", target_lufs=-23.0, lufs_tolerance=0.5, max_seconds=2.0
    )
    wanted = {f"{i}.wav": (True, i % 2 == 0) for i in range(4)}
    pooled, stats = audio_measures.measure_files(run, wanted, params, workers=2, write_cache=False)
    alone, _ = audio_measures.measure_files(run, wanted, params, workers=1, write_cache=False)
    assert stats["workers"] == 2 and pooled == alone


def test_pool_workers_do_not_run_the_main_module_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """multiprocessing runs the parent's main script again in each worker (the CLI's imports all of
    the analysis); the audio pass's workers need only the functions they are sent, and find the
    measuring code already imported by the fork server."""
    import sys
    import types

    from voice_audit.analysis.audio.measures.pool import PRELOAD
    from voice_audit.harness.procs import WorkerPool

    marker = tmp_path / "ran"
    script = tmp_path / "main_script.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    fake = types.ModuleType("__main__")
    fake.__file__ = str(script)
    fake.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", fake)
    with WorkerPool(1, "builtins:eval", preload=PRELOAD) as pool:
        assert pool.submit("'voice_audit.analysis.audio.recording' in __import__('sys').modules").result()
    assert not marker.exists()
