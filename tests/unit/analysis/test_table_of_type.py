"""EventTable.of_type: the cached cut by event type is exactly the boolean filter it replaces."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.columns import raw_columns
from voice_audit.analysis.metrics.ingest import ingest
from voice_audit.analysis.metrics.table import EventTable, frame_from_columns
from voice_audit.harness.runlog import RunReader

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


def test_of_type_equals_the_filter_for_every_type_and_pairs() -> None:
    table = ingest(GOLDEN, workers=1).table
    df = table.df
    types = sorted(set(df["type"]))
    assert len(types) >= 10
    keys = [(t,) for t in types] + list(combinations(types[:6], 2)) + [(types[0], "no_such_type"), ()]
    for key in keys:
        expected = df[df["type"].isin(key)]
        got = table.of_type(*key)
        pd.testing.assert_frame_equal(got, expected, check_index_type=False)
        assert list(got.index) == list(expected.index)


def test_changing_a_cut_leaves_the_cache_alone() -> None:
    table = ingest(GOLDEN, workers=1).table
    first = table.of_type("caller_decision")
    first["classification"] = "changed"
    first["extra"] = 1
    again = table.of_type("caller_decision")
    assert "extra" not in again.columns and (again["classification"] != "changed").all()


def test_of_type_with_columns_equals_loc() -> None:
    table = ingest(GOLDEN, workers=1).table
    df = table.df
    for key, cols in [
        (("caller_decision",), ["ep", "classification", "text", "turn"]),
        (("agent_transcript", "caller_utterance_start"), ["seq", "kind", "text", "ok", "error"]),
    ]:
        got = table.of_type(*key, columns=cols)
        pd.testing.assert_frame_equal(got, df.loc[df["type"].isin(key), cols], check_index_type=False)


def test_of_type_over_many_chunks_equals_the_filter() -> None:
    """Columns read by worker batches are chunked; cuts are taken chunk by chunk, including chunks
    holding none of the rows and cuts that start or end on a chunk boundary."""
    whole = ingest(GOLDEN, workers=1).table
    reader = RunReader(GOLDEN)
    batches = [raw_columns(reader.events(str(eid))) for eid in whole.episodes]
    lengths = np.array([len(b["t_ms"]) for b in batches], dtype=np.int64)
    chunked = EventTable(episodes=whole.episodes, df=frame_from_columns(batches, lengths))
    assert chunked.df["text"].array.__arrow_array__().num_chunks == len(batches) > 1
    pd.testing.assert_frame_equal(chunked.df, whole.df)
    df = chunked.df
    for key in [(t,) for t in sorted(set(df["type"]))] + [("call_started", "call_ended"), ()]:
        got = chunked.of_type(*key)
        pd.testing.assert_frame_equal(got, df[df["type"].isin(key)], check_index_type=False)
