"""`voice_audit.analysis.audio.pyin` gives librosa's PYIN track: the same frames voiced, the same F0 in each, and
its banded decoder the same path as librosa's dense Viterbi (ties included)."""

from __future__ import annotations

import numpy as np
import pytest

librosa = pytest.importorskip("librosa")

from voice_audit.analysis.audio.pyin import _transition_local, decode, pyin  # noqa: E402

RATE = 16000


def _voice(seconds: float, seed: int, jump: bool = False, noise: float = 1e-3) -> np.ndarray:
    """Harmonic bursts with a gliding F0 (and an octave jump), gaps of silence and line noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    f0 = 120 + 50 * np.sin(2 * np.pi * 0.4 * t + seed)
    if jump:
        f0 = np.where((t % 1.0) > 0.5, 2 * f0, f0)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    voice = sum(np.sin(k * phase) / k for k in range(1, 8))
    envelope = (np.sin(2 * np.pi * 0.9 * t + seed) > -0.3).astype(float)
    return (0.3 * voice * envelope + rng.normal(0, noise, t.size)).astype(np.float32)


CASES = [
    (
        "speech-like",
        _voice(4.0, 1),
        dict(fmin=60.0, fmax=400.0, frame_length=1024, hop_length=160, resolution=0.2),
    ),
    (
        "octave jumps",
        _voice(3.0, 2, jump=True),
        dict(fmin=60.0, fmax=400.0, frame_length=1024, hop_length=160, resolution=0.2),
    ),
    (
        "digital silence around a tone",
        np.concatenate(
            [np.zeros(8000), 0.5 * np.sin(2 * np.pi * 200 * np.arange(16000) / RATE), np.zeros(8000)]
        ).astype(np.float32),
        dict(fmin=60.0, fmax=400.0, frame_length=1024, hop_length=160, resolution=0.2),
    ),
    (
        "white noise",
        np.random.default_rng(3).normal(0, 0.1, 2 * RATE).astype(np.float32),
        dict(fmin=60.0, fmax=400.0, frame_length=1024, hop_length=160, resolution=0.2),
    ),
    ("librosa defaults", _voice(2.0, 4), dict(fmin=65.0, fmax=500.0)),
    (
        "coarse hop, wide range",
        _voice(3.0, 5, noise=1e-2),
        dict(fmin=50.0, fmax=800.0, frame_length=2048, hop_length=512, resolution=0.5),
    ),
]


@pytest.mark.parametrize(("name", "y", "kw"), CASES, ids=[c[0] for c in CASES])
def test_track_equals_librosa_pyin(name: str, y: np.ndarray, kw: dict) -> None:
    f_ref, v_ref, p_ref = librosa.pyin(y, sr=RATE, **kw)
    f, v, p = pyin(y, sr=RATE, **kw)
    assert f.shape == f_ref.shape and v.shape == v_ref.shape
    assert np.array_equal(v, v_ref), f"{name}: voicing differs in {int((v != v_ref).sum())} frames"
    assert np.array_equal(np.isnan(f), np.isnan(f_ref))
    assert np.array_equal(f[v], f_ref[v]), f"{name}: F0 differs"
    # voiced probability: the same sums, up to the order BLAS adds them in
    assert np.allclose(p, p_ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_banded_decoder_equals_librosa_viterbi(seed: int) -> None:
    """Random observations with exact zeros and repeated rows, so out-of-band moves and ties occur."""
    rng = np.random.default_rng(seed)
    n_bins, width, frames = 37, 9, 120
    obs = rng.random((2 * n_bins, frames)) ** 4
    obs[rng.random(obs.shape) < 0.6] = 0.0  # most states impossible in most frames
    obs[:, 10:20] = obs[:, 10:11]  # identical frames: ties between paths
    obs[:n_bins, 30:40] = 0.0
    obs[n_bins:, 30:40] = 0.0  # every state at probability 0: only tiny() separates paths
    obs[:, 50:60] = 1.0 / (2 * n_bins)  # uniform
    obs[rng.integers(0, n_bins, frames), np.arange(frames)] = 1.0  # isolated far jumps
    local = librosa.sequence.transition_local(n_bins, width, window="triangle", wrap=False)
    dense = np.kron(librosa.sequence.transition_loop(2, 0.99), local)
    expected = librosa.sequence.viterbi(obs, dense, p_init=np.ones(2 * n_bins) / (2 * n_bins))
    assert np.array_equal(decode(obs, n_bins, width, 0.01), expected.astype(np.int64))


def test_bad_range_is_refused_with_the_values() -> None:
    with pytest.raises(ValueError, match="fmin=400"):
        pyin(np.zeros(RATE, dtype=np.float32), fmin=400.0, fmax=100.0, sr=RATE)


@pytest.mark.parametrize(("n", "width"), [(37, 9), (165, 21), (10, 4), (11, 11)])
def test_transition_matrix_is_librosa_s(n: int, width: int) -> None:
    expected = librosa.sequence.transition_local(n, width, window="triangle", wrap=False)
    assert np.array_equal(_transition_local(n, width), expected)
