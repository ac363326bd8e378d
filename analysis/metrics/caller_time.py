"""The caller's own speaking time inside a window of the call clock.

Timing metrics about the agent (waiting for a human, time to resolution) run on a clock that the
caller's speech also advances: a caller who speaks more slowly adds their own seconds to every
window that contains their turns, and a voice's speaking rate would read as the agent's delay.
Those metrics subtract the caller's speaking time inside their window and report it beside them as
a covariate (docs/method/index.md, "the speaker is the unit of evidence").

A caller turn lasts from its `caller_utterance_start` to its `caller_utterance_end` (earlier when
cut off), or for its clip's `duration_ms` when the end was not logged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.table import EventTable


def caller_turn_spans(table: EventTable) -> pd.DataFrame:
    """Every caller turn as (ep, t_start, t_end) in ms on the call clock."""
    starts = table.of_type("caller_utterance_start", columns=["ep", "turn", "t_ms", "duration_ms"])
    ends = table.of_type("caller_utterance_end", columns=["ep", "turn", "t_ms"]).drop_duplicates(
        ["ep", "turn"], keep="last"
    )
    spans = starts.merge(ends, on=["ep", "turn"], how="left", suffixes=("", "_end"))
    t_start = spans["t_ms"].astype(float)
    t_end = spans["t_ms_end"].astype(float).fillna(t_start + spans["duration_ms"].astype(float).fillna(0.0))
    return pd.DataFrame(
        {"ep": spans["ep"].to_numpy(), "t_start": t_start.to_numpy(), "t_end": t_end.to_numpy()}
    )


def caller_speech_s(table: EventTable, start_ms: pd.Series, end_ms: pd.Series) -> pd.Series:
    """Seconds the caller spoke within [start_ms, end_ms] of each episode (both indexed by episode
    number, as `EventTable` numbers them); NaN where either bound is missing."""
    windows = pd.DataFrame({"t0": start_ms.astype(float), "t1": end_ms.astype(float)}).dropna()
    out = pd.Series(np.nan, index=start_ms.index, dtype=float)
    out[windows.index] = 0.0
    if windows.empty:
        return out
    spans = caller_turn_spans(table)
    joined = spans.merge(windows, left_on="ep", right_index=True)
    overlap = np.clip(
        np.minimum(joined["t_end"], joined["t1"]) - np.maximum(joined["t_start"], joined["t0"]), 0.0, None
    )
    spoken = overlap.groupby(joined["ep"]).sum() / 1000.0
    out[spoken.index] = spoken.to_numpy()
    return out


__all__ = ["caller_speech_s", "caller_turn_spans"]
