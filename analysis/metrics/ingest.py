"""Read a run folder into an episode frame and an event table, recording everything left out.

Nothing is dropped silently: a torn or invalid episodes.jsonl line, a duplicate record, a missing
or schema-invalid events.jsonl and an events file whose hash differs from its record each become
a `Problem` with a category that the summary counts. A newer schema_version in run.json is refused
by `RunReader` (SchemaVersionError) before anything is read, and so is a newer episode record.

A record of an older schema is read as the current one writes it (`upgrade`): a version 1 call the
agent did not serve becomes the outcome it is, and its frame row says `upgraded_from_schema`. The
`turns` of a record before version 3 are recounted from its events (the caller turns spoken), as
version 3 writes them; a record whose events cannot be read keeps its own count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics._episodes import episode_frame
from voice_audit.analysis.metrics._readers import LogReaderPool
from voice_audit.analysis.metrics.readlogs import LogBatches, gc_paused, small_pages, start_readers
from voice_audit.analysis.metrics.table import EventTable, frame_from_columns
from voice_audit.harness.model.episode import RunManifest
from voice_audit.harness.runlog import (
    ATTEMPT_AT,
    NON_SERVICE_SCHEMA,
    SHA256_AT,
    SPOKEN_TURN_EVENT,
    SPOKEN_TURNS_SCHEMA,
    RunReader,
    episodes_dir,
    episodes_jsonl,
    events_file,
    record_row,
    upgrade_record,
)
from voice_audit.scenarios.base import Frozen

_MIN_RECORD_BYTES = 1000  # an episodes.jsonl line is ~1.5 kB: this overestimates the count a little


class Problem(Frozen):
    category: str
    message: str
    episode_id: str | None = None


@dataclass
class Ingested:
    run_dir: Path
    manifest: RunManifest
    episodes: pd.DataFrame  # one row per distinct episode record, index episode_id
    table: EventTable  # events of analysable episodes only
    problems: list[Problem] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(Counter(p.category for p in self.problems))


def ingest(run_dir: str | Path, *, workers: int | None = None) -> Ingested:
    """Read a run folder; events files are read by `workers` processes (default: one per CPU) once
    the run is large enough to repay starting them. They start first, from the size of
    episodes.jsonl, and get ready while the records are read here."""
    reader = RunReader(run_dir)
    try:
        size = episodes_jsonl(reader.run_dir).stat().st_size
    except OSError:
        size = 0
    readers = start_readers(workers, size // _MIN_RECORD_BYTES)
    try:
        with gc_paused(), small_pages():
            return _ingest(reader, readers)
    finally:
        if readers is not None:
            readers.close()


def _ingest(reader: RunReader, readers: LogReaderPool | None) -> Ingested:
    problems: list[Problem] = []
    rows: dict[str, tuple[Any, ...]] = {}  # record_row of the kept record, in order of first appearance
    paths: dict[str, str] = {}
    upgraded: dict[str, int | None] = {}  # of the kept record
    recount: dict[str, bool] = {}  # the kept record's turns predate SPOKEN_TURNS_SCHEMA
    base = str(episodes_dir(reader.run_dir))
    logs = LogBatches(readers)
    for read_rec in reader.records():
        rec, upgraded_from = upgrade_record(read_rec)
        row = record_row(rec)
        eid = rec.header.episode_id
        if eid in rows:
            problems.append(
                Problem(
                    category="duplicate_record",
                    message=f"episode {eid}: later record (attempt {row[ATTEMPT_AT]}) kept",
                    episode_id=eid,
                )
            )
        else:  # read in the order of first appearance, the frame's order; the expected hash only
            # picks the fast validation path, the comparison below uses the kept record
            paths[eid] = events_file(base, reader.run_dir, eid)
            # a version 1 log is upgraded by what it holds (`upgrade_events`), so it matches the
            # kept record even when a duplicate record came first
            logs.add(paths[eid], row[SHA256_AT], upgrade=rec.schema_version < NON_SERVICE_SCHEMA)
        rows[eid] = row
        upgraded[eid] = upgraded_from
        recount[eid] = rec.schema_version < SPOKEN_TURNS_SCHEMA
    for msg in reader.problems.items:
        problems.append(
            Problem(category="torn_line" if "truncated" in msg else "invalid_record", message=msg)
        )
    frame = episode_frame(list(rows.values()))
    ids = list(rows)
    reads, batches = logs.finish()
    analysable: list[bool] = []
    reasons: list[str | None] = []
    hash_ok: list[float] = []
    monotonic: list[float] = []
    for eid, read in zip(ids, reads, strict=True):
        path = paths[eid]
        if read.category is not None:
            problems.append(Problem(category=read.category, message=read.info, episode_id=eid))
            analysable.append(False)
            reasons.append(read.category)
            hash_ok.append(float("nan"))
            monotonic.append(float("nan"))
            continue
        analysable.append(True)
        reasons.append(None)
        match = read.info == rows[eid][SHA256_AT]
        hash_ok.append(float(match))
        if not match:
            problems.append(
                Problem(
                    category="events_hash_mismatch",
                    message=f"{path}: sha256 differs from episodes.jsonl (edited after the run?)",
                    episode_id=eid,
                )
            )
        monotonic.append(float(read.non_monotonic is None))
        if read.non_monotonic is not None:
            problems.append(
                Problem(
                    category="clock_not_monotonic",
                    message=f"{path}: event {read.non_monotonic + 1} goes back in time",
                    episode_id=eid,
                )
            )
    frame["upgraded_from_schema"] = pd.array([upgraded[eid] for eid in ids], dtype="Int64")
    frame["analysable"] = analysable
    frame["drop_reason"] = reasons
    frame["events_hash_ok"] = hash_ok
    frame["events_monotonic"] = monotonic
    lengths = np.array([r.n_events for r in reads if r.category is None], dtype=np.int64)
    table = EventTable(
        episodes=pd.Index(
            [eid for eid, ok in zip(ids, analysable, strict=True) if ok], dtype=object, name="episode_id"
        ),
        df=frame_from_columns(batches, lengths),
    )
    older = [eid for eid in ids if recount[eid]]
    if older:
        _recount_turns(frame, table, older)
    return Ingested(
        run_dir=reader.run_dir, manifest=reader.manifest, episodes=frame, table=table, problems=problems
    )


def _recount_turns(frame: pd.DataFrame, table: EventTable, ids: list[str]) -> None:
    """`turns` of these episodes (records before SPOKEN_TURNS_SCHEMA) as the caller turns spoken in
    their events (`runlog.spoken_turns`, counted here over the table); an episode without readable
    events keeps its record's count."""
    eps = table.of_type(SPOKEN_TURN_EVENT, columns=["ep"])["ep"].to_numpy(dtype=np.int64)
    spoken = np.bincount(eps, minlength=table.n_episodes)
    at = {eid: i for i, eid in enumerate(table.episodes)}
    turns = frame["turns"].to_numpy(copy=True)
    for eid in ids:
        if eid in at:
            turns[frame.index.get_loc(eid)] = spoken[at[eid]]
    frame["turns"] = turns
