"""pivot_many: one split of the sides, the same PairedValues and errors as pivot_pairs per metric."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.stats import pivot_pairs
from voice_audit.analysis.stats.pairing import pivot_many


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = [
        dict(
            pair_id=i,
            side=s,
            scenario_id="s",
            voice_id=f"v{s}{i % 2}",
            agent="g",
            m=rng.normal(),
            n=float(i % 3),
        )
        for i in range(30)
        for s in "ab"
    ]
    rows = [r for r in rows if not (r["pair_id"] == 4 and r["side"] == "a")]
    frame = pd.DataFrame(rows)
    frame.loc[7, "m"] = np.nan
    return frame


def test_pivot_many_equals_pivot_pairs() -> None:
    frame = _frame()
    many = pivot_many(frame, ["m", "n"])
    for metric in ("m", "n"):
        one = pivot_pairs(frame, metric)
        pd.testing.assert_frame_equal(many[metric].table, one.table)
        assert many[metric].drops == one.drops and many[metric].metric == metric
    assert pivot_many(frame.drop(columns="side"), []) == {}


def test_pivot_many_raises_what_pivot_pairs_raises() -> None:
    frame = _frame()
    frame.loc[frame.index[-1], "scenario_id"] = "other"
    with pytest.raises(ValueError) as one:
        pivot_pairs(frame, "m")
    with pytest.raises(ValueError) as many:
        pivot_many(frame, ["m", "n"])
    assert str(one.value) == str(many.value) and "differs within pair" in str(one.value)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['side'\]"):
        pivot_many(frame.drop(columns="side"), ["m"])
