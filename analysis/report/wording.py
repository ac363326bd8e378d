"""Words and number formats shared by every renderer, so HTML and Markdown print the same thing."""

from __future__ import annotations

import math

CONVENTION_TEXT = (
    "a − b; for burden, higher is worse, so a negative value means condition b carried more burden"
)
MODEL_CONVENTION_TEXT = (
    "coefficient of condition a (a − b): a mean difference for burden (negative: b carried more burden), "
    "a log odds ratio of a versus b for binary outcomes"
)
DIVERGENCE_CONVENTION = "Δ(I) = m(subgroup) − m(all episodes); for burden, higher is worse"
GAP_CONVENTION = "gap = m(I, M2) − m(I, M1): the change on subgroup I when agent M1 is replaced by M2"

CLAIM_WORDS: dict[str, str] = {
    "diagnostics_only": (
        "Diagnostic only: not every gate guarding these claims passed, so the numbers describe this run "
        "and support no claim about the agent."
    ),
    "construct_validation": (
        "Construct validation only: validated artifacts turned into interpretable deltas, but too few "
        "gated pairs for a disparity claim."
    ),
    "paired_disparity": (
        "Paired disparity: for this agent, scenario and contrast, the gated pairs are enough to claim "
        "whether the two conditions were served differently on the families listed."
    ),
    "architecture_comparison": (
        "Architecture comparison: several agents reached a paired-disparity claim on the same scenario "
        "and contrast, so they may be compared there."
    ),
}


def claim_words(claim: str) -> str:
    return CLAIM_WORDS.get(claim, f"{claim} (unknown claim level)")


def fmt(value: float | int | None, digits: int = 4) -> str:
    """One number format for every renderer: 4 significant digits, '—' for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}"


def fmt_p(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return "<0.0001" if value < 1e-4 else f"{value:.4g}"


def reading(
    estimate: float | None, ci_low: float | None, ci_high: float | None, higher_is_worse: bool | None
) -> str:
    """Which condition fared worse, in words, only when the interval excludes zero."""
    if estimate is None:
        return "not estimable"
    if ci_low is None or ci_high is None:
        return "no interval"
    if ci_low <= 0.0 <= ci_high:
        return "interval includes 0: no difference shown"
    if higher_is_worse is None:
        return f"higher under condition {'a' if estimate > 0 else 'b'}"
    worse = ("a" if estimate > 0 else "b") if higher_is_worse else ("b" if estimate > 0 else "a")
    if higher_is_worse:
        return f"condition {worse} carried more burden"
    return f"condition {worse} fared worse"


def ms(value: int) -> str:
    return f"{value / 1000:.1f} s"
