"""frame_from_columns: the frame built block by block is the one pandas builds from a dict of
columns, over one batch or several, including the object columns that hold no string."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa

from voice_audit.analysis.metrics.columns import COLUMNS, FLOAT_COLUMNS, concat_columns, raw_columns
from voice_audit.analysis.metrics.table import frame_from_columns
from voice_audit.harness.model.events import Event, parse_event


def _logs() -> list[list[Event]]:
    def ev(t: int, etype: str, **fields: object) -> Event:
        return parse_event({"t_ms": t, "type": etype, **fields})

    return [
        [
            ev(0, "call_started", pacing="realtime", protocol="p"),
            ev(5, "caller_utterance_start", turn=1, kind="anchor", anchor_id=None, text="hi", duration_ms=5),
            ev(9, "tool_result", call_id="c", name="n", ok=True, result_keys=["k"], error=None),
        ],
        [],
        [
            ev(1, "agent_speech_end", turn=3, duration_ms=7, interrupted=True),
            ev(4, "tool_result", call_id="d", name="m", ok=False, result_keys=[], error=None),
            ev(6, "hang_up", by="harness", reason="r"),
        ],
    ]


def test_blocks_equal_the_dict_construction_for_one_and_several_batches() -> None:
    logs = _logs()
    lengths = np.array([len(x) for x in logs], dtype=np.int64)
    one = frame_from_columns([raw_columns([e for log in logs for e in log])], lengths)
    several = frame_from_columns([raw_columns(logs[0]), raw_columns(logs[1]), raw_columns(logs[2])], lengths)
    pd.testing.assert_frame_equal(one, several, check_exact=True)
    assert list(one.columns) == ["ep", "seq", "t_ms", "type", *COLUMNS]
    assert list(one["ep"]) == [0, 0, 0, 2, 2, 2] and list(one["seq"]) == [0, 1, 2, 0, 1, 2]
    assert list(one["t_ms"]) == [0, 5, 9, 1, 4, 6]
    assert all(one[c].dtype == np.float64 for c in FLOAT_COLUMNS)
    # error: tool_result has the field (None there), the other types lack it (NaN)
    assert one["error"].dtype == object
    errors = list(one["error"])
    assert errors[2] is None and errors[4] is None
    assert all(isinstance(errors[i], float) and math.isnan(errors[i]) for i in (0, 1, 3, 5))
    # no event here has a message field at all
    assert one["message"].dtype == object and all(v is None for v in one["message"])
    pd.testing.assert_frame_equal(one, pd.DataFrame(dict(one.items())), check_exact=True)


def test_the_frame_can_be_changed_like_any_other() -> None:
    logs = _logs()
    lengths = np.array([len(x) for x in logs], dtype=np.int64)
    df = frame_from_columns([raw_columns([e for log in logs for e in log])], lengths)
    view = df["turn"]
    df.loc[0, "turn"] = 99.0
    df["type"] = "x"
    assert df.loc[0, "turn"] == 99.0 and math.isnan(view.iloc[0]) and set(df["type"]) == {"x"}


def test_a_batch_without_any_value_of_a_string_column_sends_none() -> None:
    logs = _logs()
    first, last = raw_columns(logs[0]), raw_columns(logs[2])
    assert isinstance(first["pacing"], pa.Array) and last["pacing"] is None
    assert first["error"] is None and last["error"] is None  # present on tool_result, but always None
    assert isinstance(last["by"], pa.Array) and first["by"] is None
    lengths = np.array([len(logs[0]), len(logs[2])], dtype=np.int64)
    df = frame_from_columns([first, last], lengths)
    assert list(df["pacing"].isna()) == [False, True, True, True, True, True]
    assert list(df["by"].isna()) == [True, True, True, True, True, False]
    assert df["pacing"].dtype == "str" and df["by"].dtype == "str" and df["error"].dtype == object


def test_concatenated_groups_equal_the_columns_of_all_events() -> None:
    logs = _logs()
    flat = [e for log in logs for e in log]
    whole = raw_columns(flat)
    joined = concat_columns([raw_columns(logs[0]), raw_columns(logs[1]), raw_columns(logs[2])])
    assert whole.keys() == joined.keys()
    for col, value in whole.items():
        other = joined[col]
        if value is None or other is None:
            assert value is None and other is None, col
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, other)
        else:
            assert value.to_pylist() == other.to_pylist(), col  # type: ignore[union-attr]
    lengths = np.array([len(x) for x in logs], dtype=np.int64)
    pd.testing.assert_frame_equal(
        frame_from_columns([joined], lengths), frame_from_columns([whole], lengths), check_exact=True
    )
