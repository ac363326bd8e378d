"""Durable labels: ``ratings/labels.jsonl`` (append, flush, fsync) and ``ratings/items-<task>.json``.

Both live in the run folder, which never leaves the auditor's machine; they are the only place
where a judgement meets its episode id and intended level. Format (one JSON object per line):

    v             1 (format version)
    task          "perceptibility" | "quality" | "observer" | "intelligibility"
    rater         rater id as typed ([A-Za-z0-9_.-]{1,40})
    item          server-side item key: "perceptibility:<episode_id>:<axis>", "quality:<episode_id>"
                  "observer:<episode_id>:<turn>" or "intelligibility:<episode_id>:<turn>"
    episode_id    the rated episode
    audio         what was played: "caller" | "agent" | "call"
    axis          perceptibility: the manipulated axis; quality: null
    options       perceptibility: the level keys offered, in display order; observer: the act keys; quality: []
    intended      perceptibility: the episode's level on the axis; quality: null
    perceived     perceptibility: the level key the rater chose; quality: null
    scores        quality: {scale name: 1-based ordinal point}; perceptibility: {}
    turn          observer: the agent turn rated; intelligibility: the caller turn heard; otherwise null
    act           observer: the act key the rater chose (see ``voice_audit.analysis.rating.observer``); otherwise null
    facts         observer: the fact names the rater chose (possibly none); otherwise []
    reference     intelligibility: the scripted words of the caller turn; otherwise null
    heard         intelligibility: the words the rater typed (whitespace collapsed; "" = none
                  understood); otherwise null
    position      0-based index of the item in this rater's seeded order
    plays         times the rater started playback before submitting
    response_ms   server time from serving the item to receiving the label
    session       random id of the server session (one per `voice-audit rate` start)
    labelled_at   UTC ISO-8601 timestamp

A torn last line (a crash mid-write) is dropped on the next start; a rater never has two labels
for one item because the server refuses a second one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from pydantic import Field, ValidationError

from voice_audit.analysis.rating.tasks import AudioPart, TaskKind, TaskSpec
from voice_audit.harness.runlog import (
    atomic_write_bytes,
    labels_jsonl,
    rating_items,
)
from voice_audit.scenarios.base import Frozen

FORMAT_VERSION = 1


class LabelRecord(Frozen):
    """One line of ratings/labels.jsonl (see the module docstring)."""

    v: int = FORMAT_VERSION
    task: TaskKind
    rater: str
    item: str
    episode_id: str
    audio: AudioPart
    axis: str | None = None
    options: tuple[str, ...] = ()
    intended: str | None = None
    perceived: str | None = None
    scores: dict[str, int] = Field(default_factory=dict)
    turn: int | None = Field(default=None, ge=0)
    act: str | None = None
    facts: tuple[str, ...] = ()
    reference: str | None = None
    heard: str | None = None
    position: int = Field(ge=0)
    plays: int = Field(ge=0)
    response_ms: int = Field(ge=0)
    session: str
    labelled_at: dt.datetime


def labels_path(run_dir: str | Path) -> Path:
    return labels_jsonl(Path(run_dir))


def read_labels(run_dir: str | Path) -> list[LabelRecord]:
    """Every complete, valid line; a torn or foreign line is skipped rather than failing the analysis."""
    path = labels_path(run_dir)
    if not path.exists():
        return []
    out: list[LabelRecord] = []
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n") or not raw.strip():
                continue
            try:
                out.append(LabelRecord.model_validate_json(raw))
            except ValidationError:
                continue
    return out


def write_items(run_dir: str | Path, spec: TaskSpec) -> Path:
    """The un-blinded item list of a task, so the analysis can be redone without the server."""
    path = rating_items(Path(run_dir), spec.task)
    atomic_write_bytes(path, (spec.model_dump_json(indent=2) + "\n").encode())
    return path


class LabelStore:
    """Append-only label log of one run folder; labels are on disk before the caller returns."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = labels_path(run_dir)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        self.records: list[LabelRecord] = read_labels(run_dir)

    def _drop_torn_tail(self) -> None:
        """A crash mid-append leaves a line without a newline; cut it so the next append starts clean."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(end)
                fh.flush()
                os.fsync(fh.fileno())

    def done(self, task: str, rater: str) -> set[str]:
        """Item keys this rater has already labelled in this task."""
        return {r.item for r in self.records if r.task == task and r.rater == rater}

    def append(self, record: LabelRecord) -> None:
        """Write one line with O_APPEND, fsync it, and only then remember it."""
        line = (
            json.dumps(record.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\n"
        ).encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.records.append(record)
