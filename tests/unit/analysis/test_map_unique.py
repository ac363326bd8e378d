"""map_unique gives exactly what mapping every row would, for every result type the extractors use."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from voice_audit.analysis.metrics import lexicon
from voice_audit.analysis.metrics.table import map_unique

FNS: list[Callable[[str], object]] = [
    lambda t: len(t.split()),
    lexicon.normalise,
    lambda t: bool(lexicon.COERCIVE_RETENTION.search(t)),
    lambda t: float(len(t)),
    lambda t: None if t == "" else t.upper(),
]
VALUES = [
    pd.Series(["a b", None, "c", "a b", ""], dtype="str", name="text", index=[5, 3, 9, 1, 2]),
    pd.Series(["You can't cancel now", "fine", "fine", None], dtype="str"),
    pd.Series([None, None], dtype="str"),
    pd.Series(["x", "y", "x"], dtype=object, name="o"),
    pd.Series([], dtype="str"),
]


def _every_row(values: pd.Series, fn: Callable[[str], object]) -> pd.Series:
    return values.fillna("").astype(str).map(fn)


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("fn", FNS)
def test_equals_mapping_every_row(values: pd.Series, fn: Callable[[str], object]) -> None:
    got = map_unique(values, fn)
    want = _every_row(values, fn)
    if want.empty:
        sample = fn("")
        want = want.astype(type(sample)) if isinstance(sample, (bool, int, float)) else want
    pd.testing.assert_series_equal(got, want, check_exact=True)
    assert got.dtype == want.dtype and got.name == values.name


def test_fn_runs_once_per_distinct_string() -> None:
    seen: list[str] = []

    def record(t: str) -> int:
        seen.append(t)
        return len(t)

    map_unique(pd.Series(["a", "b", "a", None, "a", ""], dtype="str"), record)
    assert sorted(seen) == ["", "a", "b"]
