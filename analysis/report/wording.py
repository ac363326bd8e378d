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


METRIC_NOUNS: dict[str, str] = {
    "burden_repair": "repair turns",
    "burden_repair_requests": "repair requests",
    "burden_auth": "authentication challenges",
    "burden_esc_s": "seconds waiting for a human",
    "burden_repeated_questions": "repeated questions",
    "burden_time_to_resolution_s": "seconds to resolution",
    "burden_call_s": "seconds of call",
    "burden_agent_turns": "agent turns",
    "tool_n_calls": "tool calls",
    "tool_n_failed": "failed tool calls",
    "speech_latency_ms_mean": "ms of response latency",
    "speech_overlap_n": "overlaps",
    "speech_agent_interrupted_n": "interruptions of the agent",
    "speech_rate_wps": "agent words per second",
    "speech_f0_median_hz": "Hz of agent median F0",
}
Direction = str


def direction(estimate: float | None, higher_is_worse: bool | None) -> Direction:
    """Which side the delta points at: b_worse / a_worse when harm has a direction, else higher_a / higher_b."""
    if estimate is None or estimate == 0:
        return "none"
    if higher_is_worse is None:
        return "higher_a" if estimate > 0 else "higher_b"
    a_higher = estimate > 0
    return "a_worse" if a_higher == higher_is_worse else "b_worse"


def _num(v: float) -> str:
    return f"{abs(v):.2g}" if abs(v) < 10 else f"{abs(v):.0f}"


def finding_sentence(
    metric: str,
    kind: str,
    estimate: float | None,
    ci_low: float | None,
    ci_high: float | None,
    mean_a: float | None,
    mean_b: float | None,
    n_pairs: int,
    higher_is_worse: bool | None,
    alpha: float,
    *,
    smallest_effect: float | None = None,
    no_interval: str | None = None,
) -> str:
    """The delta in words, e.g. "condition b carried 0.9 more repair turns (a − b = −0.9, 95% CI ...;
    1.8 × the smallest effect of interest, 0.5)"; an estimate without an interval says why
    ("no interval: 1 speaker")."""
    if estimate is None:
        return f"{metric}: not estimable on {n_pairs} pairs"
    level = round(100 * (1 - alpha))
    ci = (
        f"{level}% CI {fmt(ci_low, 2)} to {fmt(ci_high, 2)}"
        if ci_low is not None and ci_high is not None
        else (no_interval or "no interval")
    )
    against = (
        f"; {abs(estimate) / smallest_effect:.2g} × the smallest effect of interest, {fmt(smallest_effect, 2)}"
        if smallest_effect
        else ""
    )
    tail = f"(a − b = {fmt(estimate, 2)}, {ci}; {n_pairs} pairs{against})"
    if ci_low is not None and ci_high is not None and ci_low <= 0.0 <= ci_high:
        tail += ", interval includes 0"
    if estimate == 0:
        return f"{metric}: no difference between a and b {tail}"
    higher, lower = ("a", "b") if estimate > 0 else ("b", "a")
    if kind == "binary" and mean_a is not None and mean_b is not None:
        who = direction(estimate, higher_is_worse)
        verdict = {"a_worse": "; condition a fared worse", "b_worse": "; condition b fared worse"}.get(
            who, ""
        )
        return (
            f"{metric}: condition a {100 * mean_a:.0f}% vs condition b {100 * mean_b:.0f}% of calls{verdict} "
            f"{tail.removesuffix(', interval includes 0')}"
            + (", interval includes 0" if tail.endswith("includes 0") else "")
        )
    noun = METRIC_NOUNS.get(metric, metric)
    if higher_is_worse:
        return f"condition {higher} carried {_num(estimate)} more {noun} than condition {lower} {tail}"
    return f"condition {higher} had {_num(estimate)} more {noun} than condition {lower} {tail}"
