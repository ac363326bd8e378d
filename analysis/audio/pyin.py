"""PYIN (Mauch & Dixon 2014) as `librosa.pyin` computes it, at a fraction of its cost.

The acoustic-validity gate needs a second F0 tracker that shares no code path with Praat; this is
still librosa's PYIN (its framing, autocorrelation, thresholds, priors, transition matrix and
decoding rule), so the gate keeps comparing two independent trackers. Two steps are rewritten
because they were most of the time of an analysis with audio:

* the per-frame trough probabilities (a Python loop calling `scipy.stats.boltzmann.pmf` on every
  frame) run as one compiled loop over tables of the same pmf and beta-prior values;
* the Viterbi decoding. librosa's decoder scans every source state for every target state
  (S*S per frame, S = 2 x pitch bins). PYIN's transition matrix is banded: outside a band of
  +-`transition_width`/2 bins (in both voicing halves) it is exactly 0, which librosa turns into
  the same constant log(tiny). So for each target the best source is the best of the band
  (scanned as librosa does) and of the out-of-band states (prefix and suffix maxima of
  value + log(tiny), each the first index attaining it). The result, including librosa's
  first-index tie rule, is the same decoding in O(S * band) per frame.

`pyin` returns what `librosa.pyin(..., center=True, pad_mode="constant", fill_na=nan)` returns
(tested against it, frame by frame, on speech-like audio and on real call recordings).
"""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["decode", "install", "prepare", "pyin", "tables", "warm_kernels"]

_EPS = float(np.finfo(np.float64).tiny)


def _njit():  # type: ignore[no-untyped-def]
    import numba

    return numba.njit(cache=True, nogil=True)


@cache
def _kernels():  # type: ignore[no-untyped-def]
    """The two compiled loops (compiled once per process; numba caches the machine code on disk)."""
    jit = _njit()

    @jit
    def trough_probs(yin, thresholds, prior, beta, below_sum, no_trough_prob):  # type: ignore[no-untyped-def]
        # yin: (T, L) CMND frames. prior[n, k]: boltzmann pmf of trough position k among n.
        n_frames, n_lags = yin.shape
        n_thr = thresholds.size - 1
        out = np.zeros((n_frames, n_lags))
        idx = np.empty(n_lags, dtype=np.int64)
        cnt = np.empty(n_thr, dtype=np.int64)
        for t in range(n_frames):
            x = yin[t]
            n = 0
            if n_lags > 1 and x[0] < x[1]:
                idx[n] = 0
                n += 1
            for i in range(1, n_lags - 1):
                if x[i] < x[i - 1] and x[i] <= x[i + 1]:
                    idx[n] = i
                    n += 1
            if n_lags > 1 and x[n_lags - 1] < x[n_lags - 2]:
                idx[n] = n_lags - 1
                n += 1
            if n == 0:
                continue
            # troughs below each threshold, and the global minimum trough
            for m in range(n_thr):
                c = 0
                for k in range(n):
                    if x[idx[k]] < thresholds[m + 1]:
                        c += 1
                cnt[m] = c
            gmin = 0
            for k in range(1, n):
                if x[idx[k]] < x[idx[gmin]]:
                    gmin = k
            pos = np.zeros(n_thr, dtype=np.int64)
            for k in range(n):
                h = x[idx[k]]
                s = 0.0
                for m in range(n_thr):
                    if h < thresholds[m + 1]:
                        s += prior[cnt[m], pos[m]] * beta[m]
                        pos[m] += 1
                out[t, idx[k]] = s
            n_below = 0
            hmin = x[idx[gmin]]
            for m in range(n_thr):
                if not hmin < thresholds[m + 1]:
                    n_below += 1
            out[t, idx[gmin]] += no_trough_prob * below_sum[n_below]
        return out

    @jit
    def viterbi(log_prob, log_p_init, lo, n_band, weights, half, c):  # type: ignore[no-untyped-def]
        # log_prob: (T, S), S = 2 * half. For target j the sources whose log transition is not c
        # are, in voicing half h, rows lo[h, j] .. lo[h, j] + n_band[h, j] - 1 with log transitions
        # weights[h, j, :n_band[h, j]]; every other row has log transition c. Candidates are
        # compared in row order and replace the best only when strictly greater, so the source
        # kept is the first row attaining the max (np.argmax's rule, as in librosa's decoder).
        # Values are finite (log(p + tiny) >= -745 per frame), so -inf marks an empty range.
        n_steps, n_states = log_prob.shape
        state = np.zeros(n_steps, dtype=np.int64)
        value = np.empty((n_steps, n_states))
        ptr = np.zeros((n_steps, n_states), dtype=np.int64)
        for j in range(n_states):
            value[0, j] = log_prob[0, j] + log_p_init[j]
        # pre[h, o]: best of prev + c over rows [h*half, h*half + o); suf[h, o]: over [h*half + o, (h+1)*half)
        pre_v = np.empty((2, half + 1))
        pre_i = np.zeros((2, half + 1), dtype=np.int64)
        suf_v = np.empty((2, half + 1))
        suf_i = np.zeros((2, half + 1), dtype=np.int64)
        for t in range(1, n_steps):
            prev = value[t - 1]
            for h in range(2):
                a = h * half
                pre_v[h, 0] = -np.inf
                for o in range(half):
                    v = prev[a + o] + c
                    if v > pre_v[h, o]:
                        pre_v[h, o + 1] = v
                        pre_i[h, o + 1] = a + o
                    else:
                        pre_v[h, o + 1] = pre_v[h, o]
                        pre_i[h, o + 1] = pre_i[h, o]
                suf_v[h, half] = -np.inf
                for o in range(half - 1, -1, -1):
                    v = prev[a + o] + c
                    if v >= suf_v[h, o + 1]:
                        suf_v[h, o] = v
                        suf_i[h, o] = a + o
                    else:
                        suf_v[h, o] = suf_v[h, o + 1]
                        suf_i[h, o] = suf_i[h, o + 1]
            for j in range(n_states):
                bv = -np.inf
                bi = 0
                for h in range(2):
                    a = h * half
                    l0 = lo[h, j]
                    nb = n_band[h, j]
                    o0 = l0 - a
                    if pre_v[h, o0] > bv:
                        bv = pre_v[h, o0]
                        bi = pre_i[h, o0]
                    w = weights[h, j]
                    for m in range(nb):
                        v = prev[l0 + m] + w[m]
                        if v > bv:
                            bv = v
                            bi = l0 + m
                    o1 = o0 + nb
                    if suf_v[h, o1] > bv:
                        bv = suf_v[h, o1]
                        bi = suf_i[h, o1]
                ptr[t, j] = bi
                value[t, j] = log_prob[t, j] + bv
        best = 0
        last = value[n_steps - 1]
        for j in range(1, n_states):
            if last[j] > last[best]:
                best = j
        state[n_steps - 1] = best
        for t in range(n_steps - 2, -1, -1):
            state[t] = ptr[t + 1, state[t + 1]]
        return state

    return trough_probs, viterbi


_TABLES: dict[
    tuple[int, float, float, float, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
] = {}


def _tables(
    n_thresholds: int, beta_a: float, beta_b: float, boltzmann: float, max_troughs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Thresholds, beta prior mass per threshold, its prefix sums and the boltzmann pmf table,
    each computed by the same scipy/numpy calls as librosa.pyin (once per process, or handed to a
    pool worker by `warm`, which then never imports scipy.stats)."""
    key = (n_thresholds, beta_a, beta_b, boltzmann, max_troughs)
    if key not in _TABLES:
        _TABLES[key] = _compute_tables(*key)
    return _TABLES[key]


def _compute_tables(
    n_thresholds: int, beta_a: float, beta_b: float, boltzmann: float, max_troughs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    import scipy.stats

    thresholds = np.linspace(0, 1, n_thresholds + 1)
    beta_probs = np.diff(scipy.stats.beta.cdf(thresholds, beta_a, beta_b))
    below = np.array([np.sum(beta_probs[:k]) for k in range(n_thresholds + 1)])
    n = np.arange(max_troughs + 1)[:, None]
    k = np.arange(max_troughs + 1)[None, :]
    with np.errstate(invalid="ignore"):
        prior = scipy.stats.boltzmann.pmf(k, boltzmann, np.maximum(n, 1))
    prior = np.where((k < n) & (n > 0), prior, 0.0)
    return thresholds, beta_probs, below, np.ascontiguousarray(prior)


def _transition_local(n_states: int, width: int) -> np.ndarray:
    """`librosa.sequence.transition_local(n_states, width, window="triangle", wrap=False)`, with
    scipy.signal's symmetric triangle window written out (a worker need not import scipy.signal)."""
    k = np.arange(1, (width + 1) // 2 + 1)
    if width % 2 == 0:
        half = (2 * k - 1.0) / width
        window = np.r_[half, half[::-1]]
    else:
        half = 2 * k / (width + 1.0)
        window = np.r_[half, half[-2::-1]]
    lpad = (n_states - width) // 2
    row0 = np.pad(window, (lpad, n_states - width - lpad))
    transition = np.zeros((n_states, n_states), dtype=np.float64)
    for i in range(n_states):
        row = np.roll(row0, n_states // 2 + i + 1)
        row[min(n_states, i + width // 2 + 1) :] = 0
        row[: max(0, i - width // 2)] = 0
        transition[i] = row
    transition /= transition.sum(axis=1, keepdims=True)
    return transition


def _transition_loop(prob: float) -> np.ndarray:
    """`librosa.sequence.transition_loop(2, prob)`."""
    transition = np.empty((2, 2))
    transition.fill(1 - prob)
    np.fill_diagonal(transition, prob)
    return transition


@cache
def _transition(n_pitch_bins: int, transition_width: int, switch_prob: float) -> tuple[np.ndarray, ...]:
    """librosa's PYIN transition in log space, and for each target its band of sources per half:
    (log_trans,) alone when the matrix is not banded as expected (then librosa decodes)."""
    transition = np.kron(_transition_loop(1 - switch_prob), _transition_local(n_pitch_bins, transition_width))
    log_trans = np.log(transition + _EPS)
    c = float(np.log(0.0 + _EPS))
    n = 2 * n_pitch_bins
    lo = np.zeros((2, n), dtype=np.int64)
    n_band = np.zeros((2, n), dtype=np.int64)
    weights = np.zeros((2, n, transition_width))
    for j in range(n):
        for h in range(2):
            a = h * n_pitch_bins
            rows = np.flatnonzero(log_trans[a : a + n_pitch_bins, j] != c) + a
            if rows.size == 0:
                lo[h, j] = a
                continue
            if rows[-1] - rows[0] + 1 != rows.size or rows.size > transition_width:
                return (log_trans,)
            lo[h, j], n_band[h, j] = rows[0], rows.size
            weights[h, j, : rows.size] = log_trans[rows, j]
    return log_trans, lo, n_band, weights, np.array([c])


def _cmnd(frames: np.ndarray, min_period: int, max_period: int) -> np.ndarray:
    """librosa's cumulative mean normalised difference (YIN eq. 8), as (frames, lags).

    `frames` is (n_frames, frame_length). The operations are librosa's (scipy.fft autocorrelation
    padded to next_fast_len(2N-1), librosa.util.abs2, the cumulative energy), laid out one frame per
    row so each transform reads contiguous memory, and the energy sum stops at the longest lag
    (later rows of librosa's cumulative sum are never read). Same values, tested.
    """
    import scipy.fft

    n = frames.shape[1]
    n_pad = scipy.fft.next_fast_len(2 * n - 1, real=True)
    spectrum = scipy.fft.rfft(frames, n=n_pad, axis=-1)
    power = np.square(spectrum.real) + np.square(spectrum.imag)  # librosa.util.abs2
    acf = scipy.fft.irfft(power, n=n_pad, axis=-1)
    acf = acf[:, : min(max_period + 1, n)]
    energy = np.cumsum(np.square(frames[:, :max_period]), axis=-1)
    energy[:, 0] = 0  # librosa zeroes row 0 of its energy array before subtracting it
    yin = np.empty((frames.shape[0], max_period + 1), dtype=energy.dtype)
    yin[:, 0] = 0
    yin[:, 1:] = 2 * (acf[:, 0:1] - acf[:, 1 : max_period + 1]) - energy
    numerator = yin[:, min_period : max_period + 1]
    k_range = np.arange(1, max_period + 1)
    cumulative_mean = np.cumsum(yin[:, 1:], axis=-1) / k_range
    denominator = cumulative_mean[:, min_period - 1 : max_period]
    out: np.ndarray = numerator / (denominator + np.finfo(denominator.dtype).tiny)
    return out


def _parabolic(x: np.ndarray) -> np.ndarray:
    """librosa's parabolic shifts along the last axis (0 at both edges and where |b| >= |a|)."""
    shifts = np.zeros_like(x)
    a = x[:, 2:] + x[:, :-2] - 2 * x[:, 1:-1]
    b = (x[:, 2:] - x[:, :-2]) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        s = -b / a
    shifts[:, 1:-1] = np.where(np.abs(b) >= np.abs(a), 0, s)
    return shifts


def decode(obs: np.ndarray, n_pitch_bins: int, transition_width: int, switch_prob: float) -> np.ndarray:
    """PYIN's Viterbi path for observation probabilities `obs` (2 * n_pitch_bins, frames), uniform
    start: the states `librosa.sequence.viterbi` returns for PYIN's transition matrix."""
    trans = _transition(n_pitch_bins, transition_width, float(switch_prob))
    p_init = np.ones(2 * n_pitch_bins) / (2 * n_pitch_bins)
    if len(trans) == 1:  # not banded as expected: librosa's own decoder on the same matrix
        import librosa

        dense = librosa.sequence.transition_local(
            n_pitch_bins, transition_width, window="triangle", wrap=False
        )
        dense = np.kron(librosa.sequence.transition_loop(2, 1 - switch_prob), dense)
        return np.asarray(librosa.sequence.viterbi(obs, dense, p_init=p_init), dtype=np.int64)
    _, lo, n_band, weights, c = trans
    eps = float(np.finfo(obs.dtype).tiny)
    log_prob = np.ascontiguousarray(np.log(obs + eps).T)
    _, viterbi = _kernels()
    out: np.ndarray = viterbi(log_prob, np.log(p_init + eps), lo, n_band, weights, n_pitch_bins, float(c[0]))
    return out


def pyin(
    y: np.ndarray,
    *,
    fmin: float,
    fmax: float,
    sr: int,
    frame_length: int = 2048,
    hop_length: int | None = None,
    n_thresholds: int = 100,
    beta_parameters: tuple[float, float] = (2, 18),
    boltzmann_parameter: float = 2,
    resolution: float = 0.1,
    max_transition_rate: float = 35.92,
    switch_prob: float = 0.01,
    no_trough_prob: float = 0.01,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(f0 with NaN where unvoiced, voiced flag, voiced probability) for mono `y`, as librosa.pyin."""
    if fmin <= 0 or fmin >= fmax or fmax > sr / 2:
        raise ValueError(f"pyin needs 0 < fmin < fmax <= sr/2, got fmin={fmin}, fmax={fmax}, sr={sr}")
    hop = frame_length // 4 if hop_length is None else hop_length
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"pyin needs mono audio, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.floating) or not np.isfinite(y).all():
        raise ValueError("pyin needs finite floating-point samples")
    y = np.pad(y, (frame_length // 2, frame_length // 2), mode="constant")
    n_frames = 1 + (y.size - frame_length) // hop
    frames = np.lib.stride_tricks.as_strided(
        y, shape=(n_frames, frame_length), strides=(hop * y.strides[0], y.strides[0]), writeable=False
    )
    min_period = int(np.floor(sr / fmax))
    max_period = min(int(np.ceil(sr / fmin)), frame_length - 1)
    yin = _cmnd(frames, min_period, max_period)
    shifts = _parabolic(yin)

    n_lags = yin.shape[1]
    thresholds, beta_probs, below, prior = _tables(
        n_thresholds, float(beta_parameters[0]), float(beta_parameters[1]), float(boltzmann_parameter), n_lags
    )
    trough_probs, _ = _kernels()
    yin_probs = trough_probs(
        np.ascontiguousarray(yin, dtype=np.float64),
        thresholds,
        prior,
        beta_probs,
        below,
        float(no_trough_prob),
    )

    n_bins_per_semitone = int(np.ceil(1.0 / resolution))
    n_pitch_bins = int(np.floor(12 * n_bins_per_semitone * np.log2(fmax / fmin))) + 1
    yin_period, frame_index = np.nonzero(yin_probs.T)  # librosa's (lag, frame) order
    period = min_period + yin_period + shifts[frame_index, yin_period]
    f0_candidates = sr / period
    bin_index = 12 * n_bins_per_semitone * np.log2(f0_candidates / fmin)
    bin_index = np.clip(np.round(bin_index), 0, n_pitch_bins).astype(int)
    obs = np.zeros((2 * n_pitch_bins, yin.shape[0]))
    obs[bin_index, frame_index] = yin_probs[frame_index, yin_period]
    voiced_prob = np.clip(np.sum(obs[:n_pitch_bins, :], axis=0, keepdims=True), 0, 1)
    obs[n_pitch_bins:, :] = (1 - voiced_prob) / n_pitch_bins

    max_semitones_per_frame = round(max_transition_rate * 12 * hop / sr)
    width = max_semitones_per_frame * n_bins_per_semitone + 1
    states = decode(obs, n_pitch_bins, width, switch_prob)
    freqs = fmin * 2 ** (np.arange(n_pitch_bins) / (12 * n_bins_per_semitone))
    f0 = freqs[states % n_pitch_bins]
    voiced = states < n_pitch_bins
    f0[~voiced] = np.nan
    return f0, voiced, voiced_prob[0]


def tables() -> dict[
    tuple[int, float, float, float, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
]:
    """The prior tables this process has built (to `install` in a pool worker)."""
    return dict(_TABLES)


def install(
    entries: dict[
        tuple[int, float, float, float, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    ],
) -> None:
    """Use prior tables built by another process (a pool worker then never imports scipy.stats)."""
    _TABLES.update(entries)


def prepare(
    *,
    fmin: float,
    sr: int,
    fmax: float,
    frame_length: int,
    n_thresholds: int = 100,
    beta_parameters: tuple[float, float] = (2, 18),
    boltzmann_parameter: float = 2,
) -> None:
    """Build the prior tables `pyin` needs for these arguments (see `tables`)."""
    n_lags = min(int(np.ceil(sr / fmin)), frame_length - 1) - int(np.floor(sr / fmax)) + 1
    _tables(
        n_thresholds, float(beta_parameters[0]), float(beta_parameters[1]), float(boltzmann_parameter), n_lags
    )


def warm_kernels() -> None:
    """Load (or compile) both loops for the argument types `pyin` calls them with, on a few
    dummy frames: a fork server that does this once hands them to every worker it forks."""
    trough_probs, _ = _kernels()
    yin = np.linspace(1.0, 0.0, 3 * 8).reshape(3, 8)
    thresholds = np.linspace(0, 1, 5)
    prior = np.ascontiguousarray(np.full((9, 9), 0.1))
    trough_probs(yin, thresholds, prior, np.diff(thresholds), np.linspace(0, 1, 5), 0.01)
    obs = np.full((2 * 12, 4), 1.0 / 24)
    decode(obs, 12, 3, 0.01)
