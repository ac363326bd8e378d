"""Equivalence: does an interval show parity within a tolerance, and how many units would it take?

A difference test asks whether an interval excludes 0; a release check asks the other question,
whether the difference is small enough to ignore. Parity is shown only when the whole interval
lies inside the tolerated range (the interval-inclusion form of the two one-sided tests, TOST,
Schuirmann 1987: a (1 - alpha) interval inside the range is a TOST at alpha / 2 per side). An
interval wholly beyond a limit shows the tolerance exceeded; anything else (the interval reaches
across a limit) is inconclusive: the sample cannot tell a tolerable difference from an intolerable
one.

Rate ratios (the four-fifths rule of disparate-impact analysis: the lower of two served rates
over the higher) get their interval from `paired_rate_ratio`: MOVER-R (Donner & Zou 2012) over the Wilson intervals of the two served rates,
on the table divided by the voice clusters' design effect; it ignores the positive correlation of
paired outcomes, so it is wider than a paired interval would be, never narrower.
"""

from __future__ import annotations

import math
from typing import Literal

from voice_audit.analysis.stats.binary import wilson_interval

Equivalence = Literal["parity", "exceeded", "inconclusive"]


def equivalence(ci_low: float, ci_high: float, lowest: float | None, highest: float | None) -> Equivalence:
    """parity: [ci_low, ci_high] inside [lowest, highest]; exceeded: wholly beyond one limit;
    inconclusive otherwise (None: unbounded on that side)."""
    if (highest is not None and ci_low > highest) or (lowest is not None and ci_high < lowest):
        return "exceeded"
    if (highest is None or ci_high <= highest) and (lowest is None or ci_low >= lowest):
        return "parity"
    return "inconclusive"


def units_needed(
    estimate: float,
    ci_low: float,
    ci_high: float,
    n_units: int,
    lowest: float | None,
    highest: float | None,
    *,
    log_scale: bool = False,
) -> int | None:
    """Units of evidence (speakers, or pairs when every pair is its own unit) an interval of this
    spread would need to lie inside [lowest, highest], if the estimate stayed where it is and the
    half-width shrank as 1 / sqrt(n) (the observed variance). None when the estimate itself is
    outside the range (no sample size shows parity there) or nothing is bounded."""
    if log_scale:
        if min(estimate, ci_low, ci_high) <= 0:
            return None
        estimate, ci_low, ci_high = math.log(estimate), math.log(ci_low), math.log(ci_high)
        lowest = math.log(lowest) if lowest is not None and lowest > 0 else None
        highest = math.log(highest) if highest is not None and highest > 0 else None
    rooms = [
        r
        for r in (
            (highest - estimate) if highest is not None else None,
            (estimate - lowest) if lowest is not None else None,
        )
        if r is not None
    ]
    if not rooms or min(rooms) <= 0 or n_units < 1:
        return None
    need = 0.0
    if highest is not None:
        need = max(need, n_units * ((ci_high - estimate) / (highest - estimate)) ** 2)
    if lowest is not None:
        need = max(need, n_units * ((estimate - ci_low) / (estimate - lowest)) ** 2)
    return max(2, math.ceil(need - 1e-9))


def paired_rate_ratio(
    n11: float, n10: float, n01: float, n00: float, alpha: float = 0.05, design_effect: float = 1.0
) -> tuple[float | None, float | None, float | None]:
    """(rate a / rate b, ci_low, ci_high) of a paired 0/1 table; None when rate b is 0 (the ratio is
    then undefined or unbounded: put the lower rate on top, as the four-fifths rule does)."""
    deff = max(design_effect, 1.0)
    n = (n11 + n10 + n01 + n00) / deff
    xa, xb = (n11 + n10) / deff, (n11 + n01) / deff
    if n <= 0 or xa < 0 or xb <= 0:
        return None, None, None
    p1, p2 = xa / n, xb / n
    l1, u1 = wilson_interval(xa, n, alpha)
    l2, u2 = wilson_interval(xb, n, alpha)
    ratio = p1 / p2
    a_lo = (p1 * p2) ** 2 - l1 * u2 * (2 * p1 - l1) * (2 * p2 - u2)
    den_lo = u2 * (2 * p2 - u2)
    lo = (p1 * p2 - math.sqrt(max(a_lo, 0.0))) / den_lo if den_lo > 0 else 0.0
    a_hi = (p1 * p2) ** 2 - u1 * l2 * (2 * p1 - u1) * (2 * p2 - l2)
    den_hi = l2 * (2 * p2 - l2)
    hi = (p1 * p2 + math.sqrt(max(a_hi, 0.0))) / den_hi if den_hi > 0 else math.inf
    return float(ratio), float(max(0.0, min(lo, ratio))), float(max(hi, ratio))
