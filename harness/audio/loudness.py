"""Integrated loudness (ITU-R BS.1770-4) exactly as pyloudnorm measures it, in one filter pass.

pyloudnorm runs its two K-weighting stages one after another and sums every 400 ms block again;
here both stages run as one second-order-section pass with pyloudnorm's own coefficients and the
block mean squares come from one cumulative sum, so loudness of a long call costs one filter
pass (equal to pyloudnorm to 1e-9 LU, tested). `block_energies_compiled` is the same recursion
compiled (numba) for the analysis's audio pass: both channels of a call in one loop, each block
summed from its 100 ms stretches, states flushed in digital silence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

import numpy as np

from voice_audit.harness.audio.samples import to_float, to_int16

_BLOCK_S = 0.4
_STEP = 0.25
_ABS_GATE = -70.0
_K_SOS: dict[int, np.ndarray] = {}
_TINY = 1e-120
"""Filter states below this are flushed to 0 at a 100 ms boundary (`block_energies_compiled`)."""


def _k_weighting(rate: int) -> np.ndarray:
    """pyloudnorm's own K-weighting stages for `rate` as second-order sections (gain folded into b)."""
    if rate not in _K_SOS:
        import pyloudnorm

        meter = pyloudnorm.Meter(rate)
        _K_SOS[rate] = np.vstack(
            [
                np.concatenate([f.passband_gain * np.asarray(f.b), np.asarray(f.a)])
                for f in meter._filters.values()
            ]
        )
    return _K_SOS[rate]


def _block_bounds(n: int, rate: int) -> tuple[np.ndarray, np.ndarray]:
    """First and one-past-last sample of each 400 ms block of `n` samples (pyloudnorm's rounding)."""
    n_blocks = int(np.round((n / rate - _BLOCK_S) / (_BLOCK_S * _STEP))) + 1
    j = np.arange(n_blocks, dtype=np.float64)
    lower = (_BLOCK_S * (j * _STEP) * rate).astype(np.int64)
    upper = np.minimum((_BLOCK_S * (j * _STEP + 1) * rate).astype(np.int64), n)
    return np.minimum(lower, n), upper


def block_energies(x: np.ndarray, rate: int) -> np.ndarray:
    """Mean square of the K-weighted signal in each 400 ms block (75 % overlap, pyloudnorm's bounds)."""
    from scipy.signal import sosfilt

    y = np.asarray(x, dtype=np.float64)
    if y.ndim != 1 or y.shape[0] < _BLOCK_S * rate:
        raise ValueError("Audio must have length greater than the block size.")
    y = sosfilt(_k_weighting(rate), y)
    lower, upper = _block_bounds(y.shape[0], rate)
    csum = np.concatenate(([0.0], np.cumsum(y * y)))
    z: np.ndarray = np.maximum(csum[upper] - csum[lower], 0.0) * (1.0 / (_BLOCK_S * rate))
    return z


@cache
def _kernel():  # type: ignore[no-untyped-def]
    """The compiled pass of `block_energies_compiled` (numba, machine code cached on disk)."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def energies(x0, x1, scale, qgain, sos, edges, lo, hi, out):  # type: ignore[no-untyped-def]
        # scipy.signal.sosfilt's recursion over K-weighting's two sections (direct form II
        # transposed, zero initial state, the same operations in the same order) on x0 and, when
        # it has samples, x1 in the same loop; each squared output summed per stretch between
        # consecutive edges, then each block's stretches. qgain > 0: each sample first becomes
        # dsp.to_int16(sample * qgain) / 32768 (rounded half to even, saturated), as normalise's
        # output is measured.
        b00, b01, b02, a01, a02 = sos[0, 0], sos[0, 1], sos[0, 2], sos[0, 4], sos[0, 5]
        b10, b11, b12, a11, a12 = sos[1, 0], sos[1, 1], sos[1, 2], sos[1, 4], sos[1, 5]
        pair = x1.size > 0
        tiny = _TINY
        n_seg = edges.size - 1
        seg = np.zeros((2, n_seg))
        p0 = p1 = q0 = q1 = 0.0  # x0: section 0 state (p), section 1 state (q)
        r0 = r1 = t0 = t1 = 0.0  # x1
        for k in range(n_seg):
            # A state under _TINY (only reached after seconds of digital silence) is set to 0: it
            # can move no later output by more than ~1e-119, so no output over ~1e-100 and no
            # block over -1990 LUFS by a bit, and it spares the squares that underflow and the
            # subnormal numbers a decaying recursion otherwise sits in for the rest of a silence.
            if max(abs(p0), abs(p1), abs(q0), abs(q1)) < tiny:
                p0 = p1 = q0 = q1 = 0.0
            if max(abs(r0), abs(r1), abs(t0), abs(t1)) < tiny:
                r0 = r1 = t0 = t1 = 0.0
            acc0 = 0.0
            acc1 = 0.0
            for i in range(edges[k], edges[k + 1]):
                v = x0[i] * scale
                if qgain > 0.0:
                    v = min(max(np.rint(v * qgain * 32768.0), -32768.0), 32767.0) * (1.0 / 32768.0)
                u = b00 * v + p0
                p0 = b01 * v - a01 * u + p1
                p1 = b02 * v - a02 * u
                w = b10 * u + q0
                q0 = b11 * u - a11 * w + q1
                q1 = b12 * u - a12 * w
                acc0 += w * w
                if pair:
                    v = x1[i] * scale
                    if qgain > 0.0:
                        v = min(max(np.rint(v * qgain * 32768.0), -32768.0), 32767.0) * (1.0 / 32768.0)
                    u = b00 * v + r0
                    r0 = b01 * v - a01 * u + r1
                    r1 = b02 * v - a02 * u
                    w = b10 * u + t0
                    t0 = b11 * u - a11 * w + t1
                    t1 = b12 * u - a12 * w
                    acc1 += w * w
            seg[0, k] = acc0
            seg[1, k] = acc1
        for c in range(out.shape[0]):
            for j in range(lo.size):
                tot = 0.0
                for k in range(lo[j], hi[j]):
                    tot += seg[c, k]
                out[c, j] = tot

    return energies


def k_weighting_tables(rates: Sequence[int]) -> dict[int, np.ndarray]:
    """The K-weighting sections for `rates` (built with pyloudnorm, which imports scipy.signal),
    to `install_k_weighting` in a process that should not import either."""
    return {rate: _k_weighting(rate) for rate in rates}


def install_k_weighting(tables: dict[int, np.ndarray]) -> None:
    """Use K-weighting sections built by another process (`k_weighting_tables`)."""
    _K_SOS.update(tables)


def warm_kernel() -> None:
    """Load (or compile) the pass of `block_energies_compiled` for float32 samples, the ones the
    audio pass gives it, on a few dummy samples (no K-weighting needed): a fork server that does
    this once hands it to every worker it forks."""
    kernel = _kernel()
    sos = np.array([[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]] * 2)
    edges, lo, hi = np.array([0, 4, 8]), np.array([0]), np.array([2])
    x = np.zeros(8, dtype=np.float32)
    kernel(x, x, 1.0, 0.0, sos, edges, lo, hi, np.empty((2, 1)))


def block_energies_compiled(
    channels: Sequence[np.ndarray], rate: int, *, int16_gain: float | None = None
) -> list[np.ndarray]:
    """`block_energies` of one or two equally long channels (int16 or float samples) in one
    compiled pass: the same K-weighting recursion as scipy's sosfilt, and each block's mean square
    summed from its 100 ms stretches instead of differenced from a running sum over the whole call
    (equal to `block_energies` to rounding, ~1e-12 relative). `block_energies` without numba.

    `int16_gain`: measure `to_int16(x * int16_gain)` of float samples instead, the samples
    `normalise` writes, without making them."""
    if int16_gain is not None and (int16_gain <= 0 or any(c.dtype == np.int16 for c in channels)):
        raise ValueError("int16_gain applies a positive gain to float samples")
    if len(channels) not in (1, 2) or len({c.shape for c in channels}) != 1:
        raise ValueError("one or two channels of the same length")
    if channels[0].ndim != 1 or channels[0].shape[0] < _BLOCK_S * rate:
        raise ValueError("Audio must have length greater than the block size.")
    try:
        kernel = _kernel()
    except ImportError:
        if int16_gain is not None:
            channels = [to_float(to_int16(c.astype(np.float64) * int16_gain)) for c in channels]
        return [block_energies(c if c.dtype != np.int16 else c / 32768.0, rate) for c in channels]
    n = channels[0].shape[0]
    lower, upper = _block_bounds(n, rate)
    edges = np.unique(np.concatenate(([0], lower, upper)))
    lo, hi = np.searchsorted(edges, lower), np.searchsorted(edges, upper)
    xs = [c if c.dtype in (np.int16, np.float32, np.float64) else c.astype(np.float64) for c in channels]
    if len({x.dtype for x in xs}) != 1:
        xs = [x.astype(np.float64) for x in xs]
    scale = 1.0 / 32768.0 if xs[0].dtype == np.int16 else 1.0
    out = np.empty((len(xs), lower.size))
    qgain = 0.0 if int16_gain is None else float(int16_gain)
    x1 = xs[1] if len(xs) == 2 else xs[0][:0]
    kernel(xs[0], x1, scale, qgain, _k_weighting(rate), edges, lo, hi, out)
    out *= 1.0 / (_BLOCK_S * rate)
    return list(out)


def gated_loudness(z: np.ndarray) -> float:
    """Integrated loudness (LUFS) from `block_energies`: the absolute and relative gates of BS.1770-4."""
    with np.errstate(divide="ignore"):
        block = -0.691 + 10.0 * np.log10(z)
    above = block >= _ABS_GATE
    if not above.any():
        return -math.inf
    rel = -0.691 + 10.0 * math.log10(float(np.mean(z[above]))) - 10.0
    gated = (block > rel) & (block > _ABS_GATE)
    if not gated.any():
        return -math.inf
    mean = float(np.mean(z[gated]))
    return -0.691 + 10.0 * math.log10(mean) if mean > 0 else -math.inf


def integrated_loudness(x: np.ndarray, rate: int) -> float:
    """Integrated loudness of mono float samples (LUFS, ITU-R BS.1770-4 as pyloudnorm measures it).

    The same filters, block bounds (400 ms, 75 % overlap, pyloudnorm's integer rounding) and the
    absolute and relative gates; both filter stages run as one second-order-section pass and the
    block mean squares come from a cumulative sum. -inf when no block passes the gates.
    """
    return gated_loudness(block_energies(x, rate))
