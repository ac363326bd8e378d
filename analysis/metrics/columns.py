"""Validated events -> raw columns (numpy and Arrow arrays), the part of building the event table
that can run in a worker process: it imports neither pandas nor anything else heavy, and its output
pickles as flat buffers.

`table.frame_from_columns` turns the columns of one or more batches into the pandas table.
"""

from __future__ import annotations

from operator import attrgetter
from typing import get_args

import numpy as np
import pyarrow as pa

from harness.model.events import Event

# Fields read from events, by column; "ep", "seq", "t_ms" and "type" are always present.
COLUMNS: tuple[str, ...] = (
    "turn",
    "kind",
    "anchor_id",
    "text",
    "duration_ms",
    "truncated",
    "heard",
    "classification",
    "action",
    "reason",
    "challenge_fact",
    "interrupted",
    "source",
    "confidence",
    "call_id",
    "name",
    "ok",
    "result_keys",
    "error",
    "from_state",
    "to_state",
    "flags",
    "status",
    "by",
    "sha256",
    "tools",
    "reported_by_agent",
    "message",
    "fatal",
    "pacing",
    "protocol",
    "arg_flags",
)
TUPLE_FIELDS = frozenset({"result_keys", "flags", "tools"})
NUMERIC = frozenset({"turn", "duration_ms", "confidence"})
BOOL = frozenset({"truncated", "interrupted", "ok", "reported_by_agent", "fatal"})
FLOAT_COLUMNS = NUMERIC | BOOL

Columns = dict[str, np.ndarray | pa.Array]


def _fields_by_type() -> dict[str, frozenset[str]]:
    union = get_args(get_args(Event)[0])
    out: dict[str, frozenset[str]] = {}
    for cls in union:
        extra = {"arg_flags"} if cls.model_fields["type"].default == "tool_call" else set()
        out[cls.model_fields["type"].default] = frozenset(cls.model_fields) | extra
    return out


FIELDS_BY_TYPE: dict[str, frozenset[str]] = _fields_by_type()


def _arg_flags(ev: Event) -> str | None:
    """escalate_to_human's `flags` argument, the only tool argument analysis reads."""
    args = getattr(ev, "arguments", None)
    raw = args.get("flags") if isinstance(args, dict) else None
    return ",".join(str(f) for f in raw if isinstance(f, str)) if isinstance(raw, list) else None


def raw_columns(flat: list[Event]) -> Columns:
    """The "t_ms" and "type" columns and every COLUMNS entry for `flat` (events in log order), one array per column.

    Each event type's values are scattered into a full-length array, so rows keep their order and
    nothing is sorted. Strings become Arrow large_string arrays (null where missing), numbers and
    booleans float64 (NaN where missing).
    """
    n = len(flat)
    types = pa.array(list(map(attrgetter("type"), flat)), type=pa.large_string())
    coded = types.dictionary_encode()
    codes = coded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(coded.dictionary) + 1))
    where: dict[str, np.ndarray] = {}
    events: dict[str, list[Event]] = {}
    for k, t in enumerate(coded.dictionary.to_pylist()):
        where[t] = order[bounds[k] : bounds[k + 1]]
        events[t] = list(map(flat.__getitem__, where[t].tolist()))
    out: Columns = {
        "t_ms": np.fromiter(map(attrgetter("t_ms"), flat), dtype=np.int64, count=n),
        "type": types,
    }
    for col in COLUMNS:
        present = [t for t in events if col in FIELDS_BY_TYPE[t]]
        values: np.ndarray = np.full(n, np.nan) if col in FLOAT_COLUMNS else np.full(n, None, dtype=object)
        for t in present:
            if col == "arg_flags":
                got: list[object] = [_arg_flags(ev) for ev in events[t]]
            elif col in TUPLE_FIELDS:
                got = [None if v is None else ",".join(v) for v in map(attrgetter(col), events[t])]
            else:
                got = list(map(attrgetter(col), events[t]))
            values[where[t]] = got
        out[col] = (
            values if col in FLOAT_COLUMNS else pa.array(values, type=pa.large_string(), from_pandas=True)
        )
    return out
