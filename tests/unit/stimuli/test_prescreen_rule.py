"""The pre-screen rule: an engine's failure is refused, a real accent's moderate gap is not."""

from __future__ import annotations

import pytest

from voice_audit.analysis.plan import load_plan
from voice_audit.harness.model.stimulus import ConditionStats, StimulusThresholds, screen, worse_ratio

TH = StimulusThresholds()


def cond(wer: float | None, words: int = 200, name: str = "x") -> ConditionStats:
    return ConditionStats(
        condition=name, backend="flite", voices=("v",), lines=10, words=words, wer=wer, wer_ci=None,
        rate_wps=None, f0_median_hz=None, f0_range_st=None, lufs=None, snr_db=None, duration_s=1.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (0.24, 0.26),  # Flite rms vs awb, measured
        (0.10, 0.25),  # a real accent costing 2.5x the words: moderate, must pass
        (0.20, 0.45),  # a large but plausible gap (ratio 2.25)
        (0.05, 0.14),  # ratio 2.8, small gap
        (0.02, 0.20),  # ratio 10 but a gap of 0.18: not beyond what speech gives
    ],
)
def test_moderate_gaps_pass(a: float, b: float) -> None:
    verdict, reasons = screen(cond(a), cond(b), TH)
    assert verdict == "pass", reasons


@pytest.mark.parametrize(
    ("a", "b", "why"),
    [
        (0.53, 1.06, "ceiling"),  # eSpeak en-us vs es over the telephone line, measured
        (0.20, 0.62, "ceiling"),
        (0.10, 0.45, "worse"),  # gap 0.35 and ratio 4.5
        (0.45, 0.08, "worse"),  # either direction
    ],
)
def test_engine_failures_fail(a: float, b: float, why: str) -> None:
    verdict, reasons = screen(cond(a), cond(b), TH)
    assert verdict == "fail"
    assert any(why in r for r in reasons), reasons


def test_too_few_words_is_not_evaluable() -> None:
    verdict, _ = screen(cond(0.1, words=5), cond(0.9), TH)
    assert verdict == "not-evaluable"
    assert screen(cond(None), cond(0.2), TH)[0] == "not-evaluable"


def test_ratio_of_zero_errors() -> None:
    assert worse_ratio(0.0, 0.0) is None
    assert worse_ratio(0.0, 0.4) == float("inf")
    assert screen(cond(0.0), cond(0.4), TH)[0] == "fail"
    assert screen(cond(0.0), cond(0.2), TH)[0] == "pass"


def test_frozen_plan_holds_the_thresholds_the_run_applies() -> None:
    """The run screens with the model's defaults; the analysis with the frozen plan's: they must agree."""
    assert load_plan().gates.stimulus == StimulusThresholds()
