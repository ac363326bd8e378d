"""Gate computation on hand-made rater tables whose statistics are known in closed form."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest

from voice_audit.analysis.rating.rating_gates import rating_gates
from voice_audit.analysis.rating.store import LabelRecord, LabelStore

NAN = math.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", 4 observers x 12 units:
# published alpha = 0.743 nominal, 0.815 ordinal (unit 12 has one value and is not pairable).
KRIPP = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    "C": [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
}
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def quality(rater: str, unit: str, scores: dict[str, int]) -> LabelRecord:
    return LabelRecord(
        task="quality",
        rater=rater,
        item=f"quality:{unit}",
        episode_id=unit,
        audio="call",
        scores=scores,
        position=0,
        plays=1,
        response_ms=1,
        session="s",
        labelled_at=AT,
    )


def percept(
    rater: str, unit: str, axis: str, intended: str, perceived: str, options: tuple[str, ...]
) -> LabelRecord:
    return LabelRecord(
        task="perceptibility",
        rater=rater,
        item=f"perceptibility:{unit}:{axis}",
        episode_id=unit,
        audio="caller",
        axis=axis,
        options=options,
        intended=intended,
        perceived=perceived,
        position=0,
        plays=1,
        response_ms=1,
        session="s",
        labelled_at=AT,
    )


def table_labels(table: list[tuple[int, int, int]], scale: str = "empathy") -> list[LabelRecord]:
    """Two raters; (rater-1 value, rater-2 value, count) cells of a contingency table."""
    out, n = [], 0
    for v1, v2, count in table:
        for _ in range(count):
            out += [quality("r1", f"u{n}", {scale: v1}), quality("r2", f"u{n}", {scale: v2})]
            n += 1
    return out


def test_cohen_kappa_two_raters_known_values() -> None:
    # p_o = 35/50 = 0.70, p_e = 0.5*0.6 + 0.5*0.4 = 0.50 -> kappa = 0.40: below 0.6, fails.
    low = rating_gates(table_labels([(1, 1, 20), (1, 2, 5), (2, 1, 10), (2, 2, 15)]))
    assert low.agreement["empathy"].statistic == "cohen_kappa"
    assert low.agreement["empathy"].value == pytest.approx(0.40)
    assert low.reliability["empathy"].verdict == "fail"
    # p_o = 0.80, p_e = 0.50 -> kappa = 0.60: exactly at the threshold, passes.
    edge = rating_gates(table_labels([(1, 1, 20), (1, 2, 5), (2, 1, 5), (2, 2, 20)]))
    assert edge.agreement["empathy"].value == pytest.approx(0.60)
    assert edge.reliability["empathy"].verdict == "pass"
    assert "empathy" in edge.reliability["empathy"].gate


def test_krippendorff_alpha_published_example_ordinal() -> None:
    labels = [
        quality(rater, f"u{j}", {"helpfulness": int(v)})
        for rater, row in KRIPP.items()
        for j, v in enumerate(row)
        if not math.isnan(v)
    ]
    gates = rating_gates(labels)
    result = gates.agreement["helpfulness"]
    assert result.statistic == "krippendorff_alpha" and result.n_raters == 4
    assert result.value == pytest.approx(0.8154, abs=5e-4)
    assert gates.reliability["helpfulness"].verdict == "pass"
    assert set(gates.agreement) == {"helpfulness"}


def test_one_rater_is_not_evaluable() -> None:
    gates = rating_gates([quality("solo", f"u{i}", {"interruption": 1 + i % 2}) for i in range(6)])
    assert gates.reliability["interruption"].verdict == "not-evaluable"


def percept_table(n_raters: int, correct_per_rater: list[int], clips: int = 4) -> list[LabelRecord]:
    """Each rater judges ``clips`` two-level accent clips, the first ``correct`` of them right."""
    opts = ("l2_spanish", "us_general")
    out = []
    for r in range(n_raters):
        for c in range(clips):
            intended = opts[c % 2]
            perceived = intended if c < correct_per_rater[r] else opts[1 - c % 2]
            out.append(percept(f"r{r}", f"e{c}", "accent", intended, perceived, opts))
    return out


def test_perceptibility_pass_fail_and_too_few_raters() -> None:
    # 5 raters x 4 clips, 18/20 right: accuracy 0.9; P(X >= 18 | 20, 1/2) = 211 / 2**20.
    good = rating_gates(percept_table(5, [4, 4, 4, 3, 3])).perceptibility["accent"]
    assert good.verdict == "pass" and good.accuracy == pytest.approx(0.9)
    assert good.chance == pytest.approx(0.5) and good.p_value == pytest.approx(211 / 2**20)
    # 15/20 = 0.75 < 0.80 fails even though p = P(X >= 15) = 21700 / 2**20 < 0.05.
    weak = rating_gates(percept_table(5, [3, 3, 3, 3, 3])).perceptibility["accent"]
    assert weak.verdict == "fail" and weak.p_value == pytest.approx(21700 / 2**20)
    # Four raters, all perfect: still not evaluable (>= 5 raters required).
    few = rating_gates(percept_table(4, [4, 4, 4, 4])).perceptibility["accent"]
    assert few.verdict == "not-evaluable" and few.accuracy == 1.0


def test_chance_uses_the_offered_options_not_the_answers() -> None:
    opts = ("calm", "frustrated", "anxious")
    labels = [percept(f"r{r}", f"e{c}", "affect", "calm", "calm", opts) for r in range(5) for c in range(2)]
    result = rating_gates(labels).perceptibility["affect"]
    assert result.chance == pytest.approx(1 / 3) and result.p_value == pytest.approx((1 / 3) ** 10)


def test_gates_read_the_run_folder_labels(tmp_path: Path) -> None:
    store = LabelStore(tmp_path)
    for rec in table_labels([(1, 1, 20), (1, 2, 5), (2, 1, 5), (2, 2, 20)]):
        store.append(rec)
    assert rating_gates(tmp_path).reliability["empathy"].verdict == "pass"
