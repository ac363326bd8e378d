"""Pivoting the episode frame: drops are counted by reason, structural errors raise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.stats import pivot_pairs


def _rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for i in range(4):
        for side in "ab":
            rows.append(
                dict(
                    pair_id=i,
                    side=side,
                    scenario_id="s",
                    voice_id=f"v{side}",
                    run_batch="r",
                    agent="g",
                    m=float(i),
                )
            )
    return rows


def test_pivot_counts_missing_partner_and_missing_value() -> None:
    rows = _rows()
    rows = [r for r in rows if not (r["pair_id"] == 0 and r["side"] == "b")]
    rows[2]["m"] = np.nan
    paired = pivot_pairs(pd.DataFrame(rows), "m")
    assert paired.n_pairs == 2 and paired.n_dropped == 2
    assert paired.drops == {"missing partner episode": 1, "metric value missing (NaN) on a or b": 1}
    assert list(paired.table.columns[:2]) == ["a", "b"]
    assert {"voice_a", "voice_b", "scenario_id"} <= set(paired.table.columns)
    assert np.all(paired.diff == 0)


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda r: r[1].update(side="c"), "side"),
        (lambda r: r[1].update(side="a"), "more than one episode"),
        (lambda r: r[1].update(scenario_id="other"), "scenario_id differs"),
        (lambda r: r[1].update(run_batch="other"), "run_batch differs"),
    ],
)
def test_structural_errors_raise(mutate: object, match: str) -> None:
    rows = _rows()
    mutate(rows)  # type: ignore[operator]
    with pytest.raises(ValueError, match=match):
        pivot_pairs(pd.DataFrame(rows), "m")


def test_missing_metric_column_raises() -> None:
    with pytest.raises(ValueError, match="lacks column"):
        pivot_pairs(pd.DataFrame(_rows()), "nope")
