"""Validated events -> raw columns (numpy and Arrow arrays), the part of building the event table
that can run in a worker process: it imports neither pandas nor anything else heavy, and its output
pickles as flat buffers.

`table.frame_from_columns` turns the columns of one or more batches into the pandas table.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import cast, get_args

import numpy as np
import pyarrow as pa

from voice_audit.harness.model.events import Event

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
    "played_ms",
    "dropped_ms",
    "stop_latency_ms",
    "overlap_ms",
    "cleared",
    "silence_ms",
    "disclosure",
    "disclosed_sha256",
    "acts",
)
TUPLE_FIELDS = frozenset({"result_keys", "flags", "tools", "acts"})
NUMERIC = frozenset(
    {
        "turn",
        "duration_ms",
        "confidence",
        "played_ms",
        "dropped_ms",
        "stop_latency_ms",
        "overlap_ms",
        "silence_ms",
    }
)
BOOL = frozenset({"truncated", "interrupted", "ok", "reported_by_agent", "fatal", "cleared"})
FLOAT_COLUMNS = NUMERIC | BOOL

Columns = dict[str, np.ndarray | pa.Array | None]  # None: a string column null on every row


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


def _fields_of(etype: str, events: list[Event]) -> dict[str, Sequence[object]]:
    """Column -> values for events of one type, each event visited once (models are scattered in
    memory: one pass per field would cost a cache miss per field)."""
    cols = [c for c in COLUMNS if c in FIELDS_BY_TYPE[etype] and c != "arg_flags"]
    values: dict[str, Sequence[object]] = {}
    if len(cols) == 1:
        values[cols[0]] = list(map(attrgetter(cols[0]), events))
    elif cols:
        values = dict(zip(cols, zip(*map(attrgetter(*cols), events), strict=True), strict=True))
    for col in TUPLE_FIELDS.intersection(values):
        values[col] = [None if v is None else ",".join(cast(tuple[str, ...], v)) for v in values[col]]
    if etype == "tool_call":
        values["arg_flags"] = [_arg_flags(ev) for ev in events]
    return values


def _spread(values: pa.LargeStringArray, rows: np.ndarray, n: int) -> pa.Array:
    """A length-n string array holding `values` at `rows`, null elsewhere, built from buffers: a
    sparse column costs a few numpy passes instead of a per-row take."""
    order = np.argsort(rows, kind="stable")
    values = values.take(pa.array(order)) if len(order) else values
    rows = rows[order]
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64, count=len(values) + 1)
    lengths = np.zeros(n, dtype=np.int64)
    lengths[rows] = np.diff(offsets)
    full = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=full[1:])
    valid = np.zeros(n, dtype=bool)
    valid[rows] = values.is_valid().to_numpy(zero_copy_only=False)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    data = values.buffers()[2] or pa.py_buffer(b"")
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(full), data, bitmap, n - int(valid.sum()))


def raw_columns(flat: list[Event]) -> Columns:
    """The "t_ms" and "type" columns and every COLUMNS entry for `flat` (events in log order).

    Events are grouped by type once; each column takes its values from the types that have the field
    and scatters them to their rows, so rows keep their order and nothing is sorted. Strings become Arrow large_string arrays (null where missing), numbers and
    booleans float64 (NaN where missing); a string column with no value at all is None.
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
    fields = {t: _fields_of(t, events[t]) for t in events}
    for col in COLUMNS:
        present = [t for t in events if col in fields[t]]
        got: list[object] = []
        for t in present:
            got.extend(fields[t][col])
        rows = np.concatenate([where[t] for t in present]) if present else np.zeros(0, dtype=np.int64)
        if col in FLOAT_COLUMNS:
            values = np.full(n, np.nan)
            values[rows] = got
            out[col] = values
        elif any(v is not None for v in got):
            out[col] = _spread(pa.array(got, type=pa.large_string()), rows, n)
        else:  # most fields of a batch (errors, states): not 8 bytes of offsets a row through a pipe
            out[col] = None
    return out


def concat_columns(parts: Sequence[Columns]) -> Columns:
    """The columns of consecutive groups of events as one, what `raw_columns` of all of them gives."""
    if len(parts) == 1:
        return parts[0]
    sizes = [len(cast(np.ndarray, p["t_ms"])) for p in parts]
    out: Columns = {}
    for col in parts[0]:
        values = [p[col] for p in parts]
        if isinstance(values[0], np.ndarray):
            out[col] = np.concatenate(cast(list[np.ndarray], values))
        elif all(v is None for v in values):
            out[col] = None
        else:
            out[col] = pa.concat_arrays(
                [
                    pa.nulls(n, pa.large_string()) if v is None else v
                    for v, n in zip(values, sizes, strict=True)
                ]
            )
    return out
