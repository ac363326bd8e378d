"""The event logs of many episodes as one columnar table, so every extractor is a vectorised pass.

Each row is one event; `ep` is the episode's position in `EventTable.episodes` and `seq` the event's
line number in its events.jsonl, so (ep, seq) is the log order. Fields of all event types share one
wide frame (a field absent from a type is None/NaN). Tuples are joined with "," (result keys,
tools, state flags) and the only tool argument analysis reads, escalate_to_human's `flags`, is kept
as `arg_flags`. Building from `Event` objects keeps the extractors tied to the data model: unit
tests hand-build logs, the run-folder reader validates them with the same pydantic union.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd

from harness.model.events import Event

T = TypeVar("T")

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
_TUPLE_FIELDS = frozenset({"result_keys", "flags", "tools"})
_NUMERIC = frozenset({"turn", "duration_ms", "confidence"})
_BOOL = frozenset({"truncated", "interrupted", "ok", "reported_by_agent", "fatal"})


@dataclass(frozen=True)
class EventTable:
    """All events of `episodes` in log order; `df` columns: ep, seq, t_ms, type and COLUMNS."""

    episodes: pd.Index
    df: pd.DataFrame

    @property
    def n_episodes(self) -> int:
        return len(self.episodes)

    def of_type(self, *types: str) -> pd.DataFrame:
        return self.df[self.df["type"].isin(types)]

    def per_episode(self, values: pd.Series, fill: float | None = 0.0) -> pd.Series:
        """Reindex a Series keyed by `ep` onto every episode (missing -> `fill`), indexed by episode id."""
        out = values.reindex(np.arange(self.n_episodes))
        if fill is not None:
            out = out.fillna(fill)
        out.index = self.episodes
        return out


def _value(ev: Event, field: str) -> object:
    if field == "arg_flags":
        args = getattr(ev, "arguments", None)
        raw = args.get("flags") if isinstance(args, dict) else None
        return ",".join(str(f) for f in raw if isinstance(f, str)) if isinstance(raw, list) else None
    value = getattr(ev, field, None)
    if field in _TUPLE_FIELDS and value is not None:
        return ",".join(value)
    return value


def from_events(logs: Mapping[str, Sequence[Event]]) -> EventTable:
    """Flatten episode_id -> events into one table (columns built per event type, then stacked)."""
    episodes = pd.Index(list(logs), dtype=object, name="episode_id")
    by_type: dict[str, list[tuple[int, int, Event]]] = {}
    for ep, events in enumerate(logs.values()):
        for seq, ev in enumerate(events):
            by_type.setdefault(ev.type, []).append((ep, seq, ev))
    frames: list[pd.DataFrame] = []
    for etype, rows in by_type.items():
        fields = set(type(rows[0][2]).model_fields) | ({"arg_flags"} if etype == "tool_call" else set())
        data: dict[str, object] = {
            "ep": np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            "seq": np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
            "t_ms": np.fromiter((r[2].t_ms for r in rows), dtype=np.int64, count=len(rows)),
            "type": etype,
        }
        evs = [r[2] for r in rows]
        for col in COLUMNS:
            if col not in fields:
                continue
            if col == "arg_flags":
                data[col] = [_value(e, col) for e in evs]
            elif col in _TUPLE_FIELDS:
                data[col] = [None if (v := e.__dict__[col]) is None else ",".join(v) for e in evs]
            else:
                data[col] = [e.__dict__[col] for e in evs]
        frames.append(pd.DataFrame(data))
    return EventTable(episodes=episodes, df=normalise_frame(frames))


def normalise_frame(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Stack per-type frames into the canonical wide layout, sorted by (ep, seq)."""
    if frames:
        df = pd.concat(frames, ignore_index=True, sort=False)
    else:
        df = pd.DataFrame(
            {
                "ep": pd.Series(dtype=np.int64),
                "seq": pd.Series(dtype=np.int64),
                "t_ms": pd.Series(dtype=np.int64),
                "type": pd.Series(dtype=object),
            }
        )
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = None
    for col in _NUMERIC:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    for col in _BOOL:
        df[col] = df[col].map({True: 1.0, False: 0.0}).astype(float)
    df = df[["ep", "seq", "t_ms", "type", *COLUMNS]]
    df = df.sort_values(["ep", "seq"], kind="stable").reset_index(drop=True)
    df["type"] = df["type"].astype(object)
    return df


def empty_table() -> EventTable:
    return EventTable(episodes=pd.Index([], dtype=object, name="episode_id"), df=normalise_frame([]))


def map_unique(values: pd.Series, fn: Callable[[str], T]) -> pd.Series:
    """Apply `fn` once per distinct string (agents repeat their lines; scripted ones always do)."""
    filled = values.fillna("").astype(str)
    table = {v: fn(v) for v in pd.unique(filled)}
    out = filled.map(table)
    if out.empty:  # keep fn's scalar type: an empty string column would make counts strings
        sample = fn("")
        if isinstance(sample, (bool, int, float)):
            return out.astype(type(sample))
    return out


def join_by_ep(ep: np.ndarray, values: Sequence[str], sep: str, n: int) -> list[str]:
    """Per-episode `sep`-join of row values in log order (rows must be sorted by ep, seq)."""
    out = [""] * n
    for e, v in zip(ep.tolist(), values, strict=True):
        out[e] = v if not out[e] else out[e] + sep + v
    return out
