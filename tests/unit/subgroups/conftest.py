"""Fixtures shared by the subgroup tests: a small deterministic episode table with planted effects."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

ATTRS = ["accent", "gender", "age", "rate"]


def _episodes(n: int = 600, seed: int = 7) -> pd.DataFrame:
    """Four caller attributes (one with missing values, one integer-coded) and planted outcome effects."""
    rng = np.random.default_rng(seed)
    accent = rng.choice(["gb", "in", "ng", "us"], n, p=[0.4, 0.2, 0.2, 0.2])
    gender = rng.choice(["f", "m"], n)
    age = rng.integers(0, 3, n)
    rate = pd.Series(rng.choice(["low", "medium", "high"], n), dtype=object)
    rate[rng.random(n) < 0.1] = np.nan
    effect = 0.8 * (accent == "ng") + 0.5 * ((gender == "m") & (age == 2))
    escalated = (rng.random(n) < 0.2 + 0.3 * effect).astype(float)
    escalated[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "accent": accent,
            "gender": gender,
            "age": age,
            "rate": rate,
            "repairs": rng.poisson(1.0 + effect).astype(float),
            "latency": rng.normal(1.0 + effect, 0.5),
            "escalated": escalated,
        }
    )


@pytest.fixture(scope="session")
def episodes() -> pd.DataFrame:
    return _episodes()


@pytest.fixture(scope="session")
def attrs() -> list[str]:
    return list(ATTRS)
