"""What a run folder holds per episode, apart from where and when it ran: the fingerprint two runs of
the same campaign must share whichever executor (one process, local workers, Ray nodes) wrote them.

Timing fields and the run's call ids differ between any two runs by design; everything else an
episode records (its header, outcome, events and the names of its files) must not.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voice_audit.harness.model.events import EVENT_ADAPTER, Event
from voice_audit.harness.runlog.layout import episode_dir, episodes_dir, episodes_jsonl
from voice_audit.harness.runlog.reader import RunReader

__all__ = ["RUN_IDENTITY_FIELDS", "TIMING_FIELDS", "RunContent", "events_content_sha256", "run_content"]

TIMING_FIELDS: frozenset[str] = frozenset({"t_ms"})
"""Fields that measure time rather than content: the virtual clock advances by measured agent
compute, so they drift by a few ms between two runs of the same campaign on any executor."""
RUN_IDENTITY_FIELDS: frozenset[str] = frozenset({"call_id"})
"""Fields that name a call to the agent: unique per run by design, so two runs never share them."""


def events_content_sha256(events: Iterable[Event]) -> str:
    """Hash of what happened in a call, with timing fields and the run's call ids dropped.

    `events_sha256` in the episode record covers the exact bytes written, timing included; this
    one is what must match between executors (and between reruns) for the same seeds.
    """
    dropped = TIMING_FIELDS | RUN_IDENTITY_FIELDS
    h = hashlib.sha256()
    for ev in events:
        data = {k: v for k, v in EVENT_ADAPTER.dump_python(ev, mode="json").items() if k not in dropped}
        h.update(json.dumps(data, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class RunContent:
    """Each recorded episode's fingerprint, and what keeps the folder from reading clean."""

    episodes: dict[str, dict[str, Any]]
    """Per episode id: header (run id dropped), outcome (duration and exact events hash dropped),
    event types, `events_content_sha256` and the files of its folder."""
    recorded_twice: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What the reader skipped (a torn or invalid line)."""
    unrecorded_folders: list[str] = field(default_factory=list)
    """Episode folders with no record: a write cut short and not yet removed by a resume."""

    def clean(self) -> bool:
        return not (self.recorded_twice or self.problems or self.unrecorded_folders)


def run_content(run_dir: Path) -> RunContent:
    """The fingerprint of every recorded episode of `run_dir`, for comparing two runs call for call."""
    reader = RunReader(run_dir)
    ids: list[str] = []
    path = episodes_jsonl(run_dir)
    if path.exists():
        for line in path.read_bytes().splitlines():
            try:
                ids.append(str(json.loads(line)["header"]["episode_id"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a torn line: the reader reports it
    twice = sorted(e for e, n in Counter(ids).items() if n > 1)
    episodes: dict[str, dict[str, Any]] = {}
    for rec in reader.records():
        eid = rec.header.episode_id
        events = reader.events(eid)
        folder = episode_dir(run_dir, eid)
        episodes[eid] = {
            "header": rec.header.model_dump(mode="json", exclude={"run_id"}),
            "outcome": rec.outcome.model_dump(mode="json", exclude={"duration_ms", "events_sha256"}),
            "event_types": [e.type for e in events],
            "content_sha256": events_content_sha256(events),
            "files": sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()),
        }
    folders = episodes_dir(run_dir)
    leftovers = (
        sorted(p.name for p in folders.iterdir() if p.name not in episodes) if folders.exists() else []
    )
    return RunContent(episodes, twice, list(reader.problems.items), leftovers)
