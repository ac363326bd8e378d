"""Reading one episode's events.jsonl: hashed, validated, and (for an older schema) upgraded.

Every event is validated through the pydantic union (`voice_audit.harness.model.events`). A file
whose sha256 matches its record was written by the harness one event per line, so the whole file
is validated as one JSON array (and must yield one event per line). Any other file (edited, or
failing that check) is validated line by line, so a bad line is reported by its number.

Analysis reads many of these in worker processes (`voice_audit.analysis.metrics.readlogs`); this
module is what each of them runs per file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple

from pydantic import TypeAdapter, ValidationError

from voice_audit.harness.model.events import EVENT_ADAPTER, Event, check_monotonic
from voice_audit.harness.runlog.compat import upgrade_events

__all__ = ["LogRead", "read_events", "read_log"]

_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


class LogRead(NamedTuple):
    """The outcome for one episode: events (n_events >= 0) or a problem (category and message)."""

    n_events: int
    category: str | None
    info: str  # the file's sha256 when read, else the problem message
    non_monotonic: int | None  # index of the first event going back in time


def _by_line(path: str | Path, lines: list[bytes]) -> tuple[list[Event] | None, str]:
    events: list[Event] = []
    for lineno, raw in enumerate(lines, start=1):
        try:
            events.append(EVENT_ADAPTER.validate_json(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            return None, f"{path}:{lineno}: invalid event ({where}: {err['msg']})"
    return events, ""


def read_events(
    path: str | Path, expected_sha256: str | None = None, upgrade: bool = False
) -> tuple[list[Event] | None, LogRead]:
    """One episode's events (None if missing or invalid) and its `LogRead`; `upgrade`: a version 1
    log, read as version 2 logs it (`compat.upgrade_events`)."""
    events, read = read_log(path, expected_sha256, upgrade)
    if events is None:
        return None, read
    return events, read._replace(non_monotonic=check_monotonic(events))


def read_log(
    path: str | Path, expected_sha256: str | None, upgrade: bool = False
) -> tuple[list[Event] | None, LogRead]:
    """`read_events` without the clock check (a batch checks its clocks at once). A path is used
    as given: a Path built per file cost ~10 us, a second over a 100k run."""
    try:
        with open(path, "rb", buffering=0) as fh:  # a third of Path.read_bytes's cost
            data = fh.readall()
    except FileNotFoundError:
        return None, LogRead(-1, "events_missing", f"{path}: missing", None)
    sha = hashlib.sha256(data).hexdigest()
    lines = data.splitlines()
    events: list[Event] | None = None
    if sha == expected_sha256:
        try:
            events = _EVENTS.validate_json(b"[" + b",".join(lines) + b"]")
        except ValidationError:
            events = None
        if events is not None and len(events) != len(lines):
            events = None
    if events is None:
        events, message = _by_line(path, lines)
        if events is None:
            return None, LogRead(-1, "events_invalid", message, None)
    if upgrade:
        events = upgrade_events(events)
    return events, LogRead(len(events), None, sha, None)
