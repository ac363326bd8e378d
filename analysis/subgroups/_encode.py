"""Integer coding of attribute columns and per-row weights of outcome columns."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .errors import AttributeInputError, OutcomeError, SubgroupWarning, TooManyLevelsError


@dataclass(frozen=True)
class _Attributes:
    names: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    codes: tuple[np.ndarray, ...]  # one int64 row per attribute, missing coded as the level count
    sizes: tuple[int, ...]  # levels + 1 when the attribute has missing values


@dataclass(frozen=True)
class _Outcomes:
    names: tuple[str, ...]
    boolean: tuple[bool, ...]
    centre: np.ndarray  # (n_out,) global mean used to centre sums
    weights: np.ndarray  # (1 + 3 n_out, n_rows): 1, present, x-c, (x-c)^2 (rows contiguous)


def _encode_attributes(
    df: pd.DataFrame,
    attributes: Sequence[str],
    max_levels: int,
    constant_attributes: Literal["drop", "keep"],
) -> _Attributes:
    names: list[str] = []
    levels: list[tuple[str, ...]] = []
    columns: list[np.ndarray] = []
    sizes: list[int] = []
    for name in attributes:
        if name not in df.columns:
            raise AttributeInputError(f"attribute {name!r} not in the table; change `attributes`")
        cat = pd.Categorical(df[name])
        if len(cat.categories) > max_levels:
            cat = cat.remove_unused_categories()
        k = len(cat.categories)
        if k > max_levels:
            raise TooManyLevelsError(
                f"attribute {name!r} has {k} distinct values (> max_levels={max_levels}); "
                "discretise it, drop it from `attributes` or raise `max_levels`"
            )
        codes = np.asarray(cat.codes, dtype=np.int64)
        has_missing = bool((codes < 0).any())
        if k == 0 or (k == 1 and not has_missing and constant_attributes == "drop"):
            reason = "is all missing" if k == 0 else "has a single value"
            warnings.warn(f"attribute {name!r} {reason}; dropped", SubgroupWarning, stacklevel=3)
            continue
        if has_missing:
            codes = np.where(codes < 0, k, codes)
        names.append(name)
        levels.append(tuple(str(c) for c in cat.categories))
        columns.append(codes)
        sizes.append(k + int(has_missing))
    if not names:
        raise AttributeInputError("no usable attribute left; change `attributes`")
    return _Attributes(tuple(names), tuple(levels), tuple(columns), tuple(sizes))


def _outcome_values(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        raise OutcomeError(f"outcome {name!r} not in the table; change `outcomes`")
    series = df[name]
    if not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)):
        raise OutcomeError(f"outcome {name!r} is not numeric or boolean; change `outcomes`")
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if np.isinf(values).any():
        raise OutcomeError(f"outcome {name!r} has infinite values; clean it or change `outcomes`")
    if np.isnan(values).all():
        raise OutcomeError(f"outcome {name!r} has no non-missing value; remove it from `outcomes`")
    return values


def _is_boolean(df: pd.DataFrame, name: str, values: np.ndarray) -> bool:
    if pd.api.types.is_bool_dtype(df[name]):
        return True
    present = values[~np.isnan(values)]
    return bool(np.all((present == 0.0) | (present == 1.0)))


def _encode_outcomes(df: pd.DataFrame, outcomes: Sequence[str], boolean: Sequence[str] | None) -> _Outcomes:
    if not outcomes:
        raise OutcomeError("no outcome given; change `outcomes`")
    if len(set(outcomes)) != len(outcomes):
        raise OutcomeError("outcome names repeat; change `outcomes`")
    n_out = len(outcomes)
    weights = np.empty((1 + 3 * n_out, len(df)), dtype=np.float64)
    weights[0] = 1.0
    centre = np.empty(n_out)
    flags: list[bool] = []
    for j, name in enumerate(outcomes):
        values = _outcome_values(df, name)
        is_bool = _is_boolean(df, name, values) if boolean is None else name in boolean
        if is_bool and not _is_boolean(df, name, values):
            raise OutcomeError(f"outcome {name!r} is not 0/1; remove it from `boolean`")
        present = ~np.isnan(values)
        centre[j] = values[present].mean()
        dev = np.where(present, values - centre[j], 0.0)
        weights[1 + j] = present
        weights[1 + n_out + j] = dev
        weights[1 + 2 * n_out + j] = dev * dev
        flags.append(is_bool)
    return _Outcomes(tuple(outcomes), tuple(flags), centre, weights)
