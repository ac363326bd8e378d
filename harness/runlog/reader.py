"""Reading a run folder: the manifest and the episode records, accepting older schema versions
and refusing newer ones with a clear message; what a reader skips is counted, never dropped silently."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from voice_audit.harness.model.episode import EpisodeRecord, RunManifest
from voice_audit.harness.model.events import EVENT_ADAPTER, Event
from voice_audit.harness.model.versioning import SCHEMA_VERSION, check_schema_version, upgrade
from voice_audit.harness.runlog.layout import (
    RUN_JSON,
    call_wav,
    episode_dir,
    episodes_jsonl,
    events_jsonl,
    run_json,
)
from voice_audit.harness.runlog.writer import RunFolderError

__all__ = ["ReadProblems", "RunReader"]


@dataclass
class ReadProblems:
    """What a reader skipped and why; analysis reports these counts instead of dropping silently."""

    items: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.items.append(message)


def _current_record(raw: bytes) -> EpisodeRecord | None:
    """A line of the current schema parsed in one strict pass (half the time of json.loads plus
    validation, which adds up over 100k records); None when anything is off (older or newer
    version, lax types, bad JSON), and the caller's general path then decides, so results and
    problems are the same either way. Strict mode: a value lax mode would coerce ("1", true, 1.0
    for schema_version) must take the general path, which rejects some of them."""
    try:
        rec = EpisodeRecord.model_validate_json(raw, strict=True)
    except Exception:  # whatever it was, the general path reports it
        return None
    if "schema_version" in rec.model_fields_set and rec.schema_version == SCHEMA_VERSION:
        return rec
    return None


class RunReader:
    """Reads a run folder, accepting older schema versions and refusing newer ones."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.problems = ReadProblems()
        path = run_json(self.run_dir)
        if not path.exists():
            raise RunFolderError(f"{self.run_dir}: no {RUN_JSON}; not a voice-audit run folder")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunFolderError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
        check_schema_version(data.get("schema_version") if isinstance(data, dict) else None, path)
        try:
            self.manifest = RunManifest.model_validate(upgrade(data, "run"), context={"stored": True})
        except ValidationError as exc:
            raise RunFolderError(f"{path}: invalid run manifest: {exc.errors()[0]['msg']}") from None

    def records(self) -> Iterator[EpisodeRecord]:
        path = episodes_jsonl(self.run_dir)
        if not path.exists():
            self.problems.add(f"{path}: missing")
            return
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                if not raw.endswith(b"\n"):
                    self.problems.add(f"{path}:{lineno}: truncated last line skipped")
                    continue
                rec = _current_record(raw)
                if rec is not None:
                    yield rec
                    continue
                try:
                    data = json.loads(raw)
                    check_schema_version(data.get("schema_version"), f"{path}:{lineno}")
                    yield EpisodeRecord.model_validate(upgrade(data, "episode"))
                except (json.JSONDecodeError, ValidationError, AttributeError) as exc:
                    self.problems.add(f"{path}:{lineno}: invalid record skipped ({type(exc).__name__})")

    def events(self, episode_id: str) -> list[Event]:
        path = events_jsonl(episode_dir(self.run_dir, episode_id))
        out: list[Event] = []
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    out.append(EVENT_ADAPTER.validate_json(raw))
                except ValidationError as exc:
                    raise RunFolderError(
                        f"{path}:{lineno}: invalid event ({exc.errors()[0]['msg']})"
                    ) from None
        return out

    def audio_path(self, episode_id: str) -> Path:
        return call_wav(episode_dir(self.run_dir, episode_id))
