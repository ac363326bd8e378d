"""The one result type every paired statistic returns, carrying its sign convention with it.

docs/method/index.md section 5 requires the convention next to every delta, so it is a field of the result
rather than a line in a report template that can drift away from the number.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CONVENTION: Literal["a - b"] = "a - b"
CONVENTION_SENTENCE = (
    "Deltas are condition a minus condition b (a - b). For burden metrics, where higher is worse, "
    "a negative delta means condition b carried more burden; for safety events a negative delta "
    "means condition b had more events."
)

MetricKind = Literal["binary", "continuous"]


class Estimate(BaseModel):
    """A paired a - b estimate with its interval, test and bookkeeping.

    ``estimate``/``ci_low``/``ci_high``/``p_value`` are ``None`` (never NaN) when the quantity is
    not estimable from the data; ``notes`` then says why. ``n_dropped`` counts pairs left out
    because a partner episode or a value was missing. ``n_clusters`` is the number of voice
    clusters the interval rests on when it was computed over them (``voice_audit.analysis.stats.cluster``;
    None: every pair counted as independent), ``design_effect`` the variance inflation a binary
    interval was computed with.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    family: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    alpha: float = Field(gt=0.0, lt=1.0)
    n_pairs: int = Field(ge=0)
    n_dropped: int = Field(ge=0)
    method: str
    p_value: float | None
    convention: Literal["a - b"] = CONVENTION
    convention_text: str = CONVENTION_SENTENCE
    mean_a: float | None = None
    mean_b: float | None = None
    n_clusters: int | None = Field(default=None, ge=1)
    design_effect: float | None = Field(default=None, ge=1.0)
    p_adjusted: float | None = None
    adjustment: str | None = None
    group: dict[str, str] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @field_validator("estimate", "ci_low", "ci_high", "p_value", "mean_a", "mean_b", "p_adjusted")
    @classmethod
    def _no_nan(cls, value: float | None) -> float | None:
        if value is not None and math.isnan(value):
            return None
        return value

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies entirely on one side of zero."""
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > 0.0 or self.ci_high < 0.0

    def sentence(self, higher_is_worse: bool = True) -> str:
        """One human sentence with the number, the interval and which condition fared worse."""
        level = f"{100 * (1 - self.alpha):g}%"
        if self.estimate is None:
            reason = "; ".join(self.notes) or "not estimable"
            return f"{self.metric} (a - b): not estimable ({reason})."
        ci = (
            f"{level} CI {self.ci_low:.4g} to {self.ci_high:.4g}"
            if self.ci_low is not None and self.ci_high is not None
            else "no interval"
        )
        if self.estimate == 0 or not self.excludes_zero:
            verdict = "the interval does not exclude zero"
        else:
            worse = "b" if (self.estimate < 0) == higher_is_worse else "a"
            verdict = f"condition {worse} fared worse"
        voices = "" if self.n_clusters is None else f", {self.n_clusters} voice cluster(s)"
        return (
            f"{self.metric}: a - b = {self.estimate:.4g} ({ci}, {self.method}, n={self.n_pairs} pairs{voices}); "
            f"{verdict}."
        )
