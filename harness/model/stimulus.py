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

STIMULI_SCHEMA_VERSION = 2
"""2: non-contrast acoustics per cell (`confounds`) and the rate matching each backend applied."""
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
    max_rate_gap: float = Field(
        default=0.06,
        gt=0,
        description="Speaking rates (words per second of speech) of the two conditions further apart than this "
        "fraction of their mean, on a cell that does not contrast rate, are named a confound.",
    )
    max_f0_gap_st: float = Field(
        default=2.0,
        gt=0,
        description="Median F0s further apart than this many semitones, on a cell that does not contrast F0, are "
        "named a confound.",
    )
    max_lufs_gap: float = Field(
        default=3.0,
        gt=0,
        description="Loudness further apart than this many LU, on a cell that does not contrast loudness, is "
        "named a confound.",
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


AcousticProperty = Literal["rate", "f0", "loudness"]
CONTRASTED: dict[str, frozenset[str]] = {
    "affect": frozenset({"rate", "f0", "loudness"}),
    "voice_profile": frozenset({"f0"}),
    "disfluency": frozenset({"rate"}),
}
"""The acoustic properties a persona axis varies by design: on a cell contrasting the axis they are
the treatment, not a confound (disfluency changes the pace; accent and wording change none)."""


class Confound(Frozen):
    """A property the cell does not contrast on which its two conditions' voices differ beyond the
    plan's tolerance: any gap between the calls may be this property's, not the contrast's."""

    property: AcousticProperty
    a: float = Field(description="Condition a's median over its lines.")
    b: float = Field(description="Condition b's median over its lines.")
    gap: float = Field(description="b against a: relative (rate), semitones (F0) or LU (loudness).")
    tolerance: float = Field(description="The frozen plan's tolerance for this property.")
    text: str = Field(description="The confound in words, with the figures.")


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
    confounds: tuple[Confound, ...] = Field(
        default=(), description="Non-contrast acoustic properties that differ beyond the plan's tolerance."
    )


class StimulusReport(Frozen):
    schema_version: int = STIMULI_SCHEMA_VERSION
    campaign: str
    campaign_sha256: str
    recogniser: dict[str, str]
    channel: dict[str, object]
    thresholds: StimulusThresholds
    cells: tuple[CellScreen, ...]
    lines: tuple[LineResult, ...]
    rate_matching: dict[str, str] = Field(
        default_factory=dict,
        description="Per TTS backend: how its voices were brought to one speaking rate (or that they were not).",
    )

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


def confounds(
    a: ConditionStats, b: ConditionStats, contrast: tuple[str, ...], th: StimulusThresholds
) -> tuple[Confound, ...]:
    """The non-contrast acoustic properties on which the two conditions differ beyond the tolerances."""
    varied = frozenset().union(*(CONTRASTED.get(axis, frozenset()) for axis in contrast))
    out: list[Confound] = []
    if "rate" not in varied and a.rate_wps and b.rate_wps:
        gap = (b.rate_wps - a.rate_wps) / ((a.rate_wps + b.rate_wps) / 2)
        if abs(gap) > th.max_rate_gap:
            out.append(
                Confound(
                    property="rate", a=a.rate_wps, b=b.rate_wps, gap=gap, tolerance=th.max_rate_gap,
                    text=f"speaking rate: a {a.rate_wps:.2f}, b {b.rate_wps:.2f} words/s "
                    f"({100 * gap:+.0f}%, tolerance {100 * th.max_rate_gap:.0f}%)",
                )
            )  # fmt: skip
    if "f0" not in varied and a.f0_median_hz and b.f0_median_hz:
        gap = 12.0 * math.log2(b.f0_median_hz / a.f0_median_hz)
        if abs(gap) > th.max_f0_gap_st:
            out.append(
                Confound(
                    property="f0", a=a.f0_median_hz, b=b.f0_median_hz, gap=gap, tolerance=th.max_f0_gap_st,
                    text=f"median F0: a {a.f0_median_hz:.0f}, b {b.f0_median_hz:.0f} Hz "
                    f"({gap:+.1f} semitones, tolerance {th.max_f0_gap_st:.1f})",
                )
            )  # fmt: skip
    if "loudness" not in varied and a.lufs is not None and b.lufs is not None:
        gap = b.lufs - a.lufs
        if abs(gap) > th.max_lufs_gap:
            out.append(
                Confound(
                    property="loudness", a=a.lufs, b=b.lufs, gap=gap, tolerance=th.max_lufs_gap,
                    text=f"loudness: a {a.lufs:.1f}, b {b.lufs:.1f} LUFS ({gap:+.1f} LU, tolerance {th.max_lufs_gap:.1f})",
                )
            )  # fmt: skip
    return tuple(out)


def worse_ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    lo, hi = sorted((a, b))
    if lo == 0:
        return None if hi == 0 else math.inf
    return hi / lo


__all__ = [
    "CONTRASTED",
    "STIMULI_FILE",
    "STIMULI_SCHEMA_VERSION",
    "AcousticProperty",
    "CellScreen",
    "ConditionStats",
    "Confound",
    "LineResult",
    "Screen",
    "StimulusReport",
    "StimulusThresholds",
    "confounds",
    "screen",
    "worse_ratio",
]
