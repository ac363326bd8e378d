"""The stimulus pilot's record and the automatic pre-screen rule (docs/method/index.md section 8).

Before any call, every line each voice of each cell can say is rendered as the agent would receive
it and read by a reference recogniser that is independent of the agents. A condition whose
reference word error is beyond what human speech of that kind produces is an engine's failure, not
a caller: every outcome gap on it would measure the text-to-speech engine. The rule lives here, in
the data model, so the run's refusal and the analysis gate apply the same one to the same record.

The rule must not suppress real accent effects: a recogniser's real, moderate gap on real accented
speech is what an audit looks for. So a cell fails only on an absolute ceiling (no condition may be
beyond what human telephone speech gives the reference recogniser), or on a gap that is both large
in absolute terms and a large multiple of the other condition's error.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from voice_audit.scenarios.base import Frozen

STIMULI_SCHEMA_VERSION = 1
STIMULI_FILE = "stimuli.json"
Screen = Literal["pass", "fail", "not-evaluable"]


class StimulusThresholds(Frozen):
    """The pre-screen's thresholds (the frozen analysis plan's `gates.stimulus`).

    Reasons for the defaults (reference recogniser: Whisper tiny.en, greedy, over the 8 kHz
    telephone band): recorded native read speech gives it a WER of about 0.1-0.25 there, and
    published accent gaps of recognisers on real speakers are ratios of about 1.5-2.5. A WER over
    0.5 means half the words are lost: no person's speech of the declared kind sounds like that to
    this recogniser, while eSpeak's second-language voices reading English spelling give 1.0-4.0.
    """

    max_wer: float = Field(
        default=0.5, gt=0, description="Ceiling on each condition's reference WER over its lines and voices."
    )
    max_gap: float = Field(
        default=0.3, gt=0, description="A gap (b - a or a - b) above this fails only together with max_ratio."
    )
    max_ratio: float = Field(
        default=3.0,
        gt=1,
        description="A ratio of the worse to the better WER above this fails only together with max_gap.",
    )
    min_words: int = Field(
        default=20, ge=1, description="Fewer reference words than this per condition: not screenable."
    )


class LineResult(Frozen):
    """One line said by one voice, as the agent would receive it, read by the reference recogniser."""

    key: str = Field(description="Audio hash of the rendered line (the cache key).")
    voice: str = Field(description="The voice: condition label and realisation.")
    condition: str = Field(description="Condition label (accent/voice_profile/affect/disfluency/wording).")
    realisation: int = Field(ge=0)
    backend: str
    text: str
    heard: str
    words: int = Field(ge=0)
    errors: int = Field(ge=0)
    duration_s: float
    speech_s: float
    rate_wps: float | None = Field(description="Words per second of speech (pauses excluded).")
    f0_median_hz: float | None
    f0_range_st: float | None = Field(description="10th to 90th percentile of F0, in semitones.")
    lufs: float | None
    snr_db: float | None = Field(description="Speech frames against the quietest frames, in dB.")
    file: str = Field(description="Audio file relative to the stimuli folder.")


class ConditionStats(Frozen):
    condition: str
    backend: str
    voices: tuple[str, ...]
    lines: int
    words: int
    wer: float | None
    wer_ci: tuple[float, float] | None = Field(description="95% interval, resampling voices and their lines.")
    rate_wps: float | None
    f0_median_hz: float | None
    f0_range_st: float | None
    lufs: float | None
    snr_db: float | None
    duration_s: float


class CellScreen(Frozen):
    """One contrast of the campaign (a scenario and two conditions), screened."""

    pairs: tuple[str, ...] = Field(description="The campaign's pair names that plan this contrast.")
    scenario_id: str
    contrast: tuple[str, ...]
    a: ConditionStats
    b: ConditionStats
    gap: float | None = Field(description="WER of b minus WER of a.")
    gap_ci: tuple[float, float] | None
    ratio: float | None = Field(description="Worse WER over better WER.")
    verdict: Screen
    reasons: tuple[str, ...]
    overridden: bool = False


class StimulusReport(Frozen):
    schema_version: int = STIMULI_SCHEMA_VERSION
    campaign: str
    campaign_sha256: str
    recogniser: dict[str, str]
    channel: dict[str, object]
    thresholds: StimulusThresholds
    cells: tuple[CellScreen, ...]
    lines: tuple[LineResult, ...]

    @property
    def failing(self) -> tuple[CellScreen, ...]:
        return tuple(c for c in self.cells if c.verdict == "fail")


def screen(a: ConditionStats, b: ConditionStats, th: StimulusThresholds) -> tuple[Screen, tuple[str, ...]]:
    """The pre-screen verdict of one cell and its reasons ('pass', 'fail' or 'not-evaluable')."""
    if a.wer is None or b.wer is None or min(a.words, b.words) < th.min_words:
        return "not-evaluable", (f"fewer than {th.min_words} reference words in a condition",)
    reasons: list[str] = []
    for side, st in (("a", a), ("b", b)):
        if st.wer is not None and st.wer > th.max_wer:
            reasons.append(
                f"condition {side} ({st.condition}, {st.backend}): reference WER {st.wer:.2f} over the ceiling {th.max_wer:.2f}"
            )
    gap = b.wer - a.wer
    lo, hi = sorted((a.wer, b.wer))
    ratio = math.inf if lo == 0 and hi > 0 else (hi / lo if lo > 0 else 1.0)
    if abs(gap) > th.max_gap and ratio > th.max_ratio:
        worse = "b" if gap > 0 else "a"
        reasons.append(
            f"condition {worse} is understood {ratio:.1f}x worse than the other (WER {a.wer:.2f} vs {b.wer:.2f}: "
            f"gap {abs(gap):.2f} over {th.max_gap:.2f} and ratio over {th.max_ratio:.1f})"
        )
    return ("fail" if reasons else "pass"), tuple(reasons)


def worse_ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    lo, hi = sorted((a, b))
    if lo == 0:
        return None if hi == 0 else math.inf
    return hi / lo


__all__ = [
    "STIMULI_FILE",
    "STIMULI_SCHEMA_VERSION",
    "CellScreen",
    "ConditionStats",
    "LineResult",
    "Screen",
    "StimulusReport",
    "StimulusThresholds",
    "screen",
    "worse_ratio",
]
