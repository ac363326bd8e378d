"""Sign-flip randomization interval for a paired mean delta (the plan's default ``signflip``).

Why: under the matched-pair null (a and b exchangeable within a pair) each pair difference is as
likely to be +d as -d, so flipping signs at random reproduces the null distribution of the mean
exactly, whatever the shape of the differences. Audit burden differences are the shape where
the t interval fails: mostly near zero with a few whole extra turns (+-2.5 s of time to
resolution), where t is conservative (a real-call A/A rejected 2.2 % at alpha 5 %). The
randomization test is exact under that null (Fisher 1935; Good 2005, ch. 3) and, being a
monotone function of the studentized mean (the sum of squares is sign-invariant), asymptotically
valid for a mean-zero null too (Janssen 1999).

Interval by test inversion: delta is in the interval iff the sign-flip test of ``d - delta``
keeps it, with the same B sign vectors for every delta. For sign vector s with A = sum s*d,
S = sum s and T = sum d, flip s is at least as extreme as the observation iff
|A - delta*S| >= |T - n*delta|: a concave quadratic in delta (|S| < n) that is non-negative
between its roots (A - T) / (S - n) and (A + T) / (S + n), an interval around the estimate. So
the count of extreme flips falls monotonically away from the estimate, the accepted set is an
interval, and its ends are order statistics of the roots: exact for the B draws, no search.

p = (1 + #extreme flips) / (B + 1), so p > alpha exactly when 0 is inside the interval.

Cost is O(B * n) for the draws. Above ``EXACT_MAX_PAIRS`` the normal limit of the same sign-flip
distribution replaces the draws: (A - delta*S) ~ N(0, sum (d - delta)^2), which gives a closed
form (a score interval); the method string says which was used.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

EXACT_MAX_PAIRS = 5000
_CHUNK_ELEMENTS = 1 << 22


def flip_sums(diff: np.ndarray, n_flips: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(A, S) for B random sign vectors: A = sum s_i d_i, S = sum s_i, s_i = +-1 with prob 1/2."""
    n = len(diff)
    total = float(diff.sum())
    a = np.empty(n_flips)
    s = np.empty(n_flips)
    rows = max(1, _CHUNK_ELEMENTS // max(n, 1))
    width = (n + 7) // 8
    for start in range(0, n_flips, rows):
        m = min(rows, n_flips - start)
        packed = np.frombuffer(rng.bytes(m * width), dtype=np.uint8).reshape(m, width)
        bits = np.unpackbits(packed, axis=1, count=n)
        # s = 2u - 1, so A = 2 * sum(u d) - T and S = 2 * sum(u) - n.
        a[start : start + m] = 2.0 * (bits.astype(np.float64) @ diff) - total
        s[start : start + m] = 2.0 * bits.sum(axis=1, dtype=np.int64) - n
    return a, s


def interval_from_flips(
    diff: np.ndarray, a: np.ndarray, s: np.ndarray, alpha: float
) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) by inverting the sign-flip test over the given flips (A, S)."""
    n = len(diff)
    total = float(diff.sum())
    n_flips = len(a)
    keep = int(np.floor(alpha * (n_flips + 1)))
    if keep < 1:
        raise ValueError(
            f"{n_flips} sign flips cannot reach alpha={alpha}; use at least {int(np.ceil(1 / alpha))}"
        )
    full = np.abs(s) >= n  # all signs equal: A = +-T, extreme for every delta
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.where(full, -np.inf, (a - total) / (s - n))
        r2 = np.where(full, np.inf, (a + total) / (s + n))
    low_roots = np.where(full, -np.inf, np.minimum(r1, r2))
    high_roots = np.where(full, np.inf, np.maximum(r1, r2))
    est = total / n
    # Float rounding can put a root a hair on the wrong side of the estimate, where every flip is
    # extreme by definition.
    low_roots = np.minimum(low_roots, est)
    high_roots = np.maximum(high_roots, est)
    lo = float(np.partition(low_roots, keep - 1)[keep - 1])
    hi = float(-np.partition(-high_roots, keep - 1)[keep - 1])
    # A flip that ties the observation (|A| = |T|, e.g. one that only flips zero differences) is
    # extreme; its root sits at 0 up to rounding of the sums.
    tol = 1e-12 * float(np.abs(diff).sum())
    extreme = int(np.count_nonzero((low_roots <= tol) & (high_roots >= -tol)))
    return lo, hi, min(1.0, (1 + extreme) / (n_flips + 1))


def normal_limit_interval(diff: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) from the normal limit of the sign-flip distribution (large n)."""
    n = len(diff)
    total = float(diff.sum())
    sq = float(np.dot(diff, diff))
    z = float(stats.norm.ppf(1 - alpha / 2))
    p = float(2 * stats.norm.sf(abs(total) / np.sqrt(sq))) if sq > 0 else 1.0
    # (T - n delta)^2 <= z^2 sum (d - delta)^2  <=>  n delta^2 - 2 T delta + (T^2 - z^2 Q)/(n - z^2) <= 0
    c = (total * total - z * z * sq) / (n - z * z)
    disc = max(total * total - n * c, 0.0)
    root = float(np.sqrt(disc))
    return (total - root) / n, (total + root) / n, p


def signflip_interval(
    diff: np.ndarray, alpha: float = 0.05, *, n_flips: int = 4999, seed: int = 0
) -> tuple[float, float, float]:
    """(ci_low, ci_high, p): Monte Carlo sign-flip inversion up to EXACT_MAX_PAIRS pairs, the
    normal limit above."""
    if len(diff) > EXACT_MAX_PAIRS:
        return normal_limit_interval(diff, alpha)
    a, s = flip_sums(diff, n_flips, np.random.default_rng(seed))
    return interval_from_flips(diff, a, s, alpha)
