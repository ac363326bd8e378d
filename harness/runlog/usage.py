"""The usage ledger of a run (`runs/<id>/usage.jsonl`): one line per placed call attempt, appended
and flushed when the attempt ends, and read back by the budget of a resumed run and the cost report.

What the harness meters itself (call minutes per protocol, the characters its TTS spoke, the
seconds of agent audio its recogniser read) is always known. What the agent side consumed is
known only when the adapter reported it (`voice_audit.harness.adapter.UsageOut`, logged as `usage` events);
otherwise it is one `agent_usage` item with quantity None and the reason, never a zero.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.model.events import CallerUtteranceStart, CallStarted, Event, Usage
from voice_audit.harness.model.usage import (
    AGENT_USAGE,
    ASR_AUDIO_SECONDS,
    CALL_MINUTES,
    TTS_CHARACTERS,
    USAGE_SCHEMA_VERSION,
    UsageItem,
    UsageRecord,
)
from voice_audit.harness.runlog.layout import usage_jsonl


def call_usage(
    record: EpisodeRecord,
    events: Sequence[Event],
    *,
    pair_id: str,
    tts_model: str | None,
    asr_model: str | None,
    asr_seconds: float | None,
) -> UsageRecord:
    """The ledger line of one finished attempt, from its record and its events.

    `asr_seconds` None: the campaign has no recogniser of its own (no item); a number: what it read.
    """
    h, o = record.header, record.outcome
    protocol = next((e.protocol for e in events if isinstance(e, CallStarted)), None)
    protocol = protocol or (h.exposure.protocol if h.exposure is not None else None) or "unknown"
    items: list[UsageItem] = [
        UsageItem(meter=CALL_MINUTES, quantity=o.duration_ms / 60_000, side="harness", source="harness"),
        UsageItem(
            meter=TTS_CHARACTERS,
            quantity=float(sum(len(e.text) for e in events if isinstance(e, CallerUtteranceStart))),
            side="harness",
            source="harness",
            model=tts_model,
        ),
    ]
    if asr_seconds is not None:
        items.append(
            UsageItem(
                meter=ASR_AUDIO_SECONDS,
                quantity=asr_seconds,
                side="harness",
                source="harness",
                model=asr_model,
            )
        )
    reported: dict[tuple[str, str, str | None], float] = {}
    unreported: dict[tuple[str, str, str | None], None] = {}
    for e in events:
        if isinstance(e, Usage):
            for meter, q in e.quantities.items():
                key = (meter, e.source, e.model)
                reported[key] = reported.get(key, 0.0) + float(q)
            for meter in e.unknown:
                unreported[(meter, e.source, e.model)] = None
    for (meter, source, model), q in sorted(
        reported.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")
    ):
        if (meter, source, model) not in unreported:
            items.append(UsageItem(meter=meter, quantity=q, side="agent", source=source, model=model))
    for meter, source, model in unreported:  # a part of the call went unreported: the total is unknown
        items.append(
            UsageItem(
                meter=meter,
                quantity=None,
                side="agent",
                source=source,
                model=model,
                reason="the agent side left part of the call unreported",
            )
        )
    if not reported and not unreported:
        items.append(
            UsageItem(
                meter=AGENT_USAGE,
                quantity=None,
                side="agent",
                source="harness",
                reason=f"the agent side reported no usage over {protocol}",
            )
        )
    return UsageRecord(
        run_id=h.run_id,
        episode_id=h.episode_id,
        pair_id=pair_id,
        attempt=h.attempt,
        agent=h.agent,
        protocol=protocol,
        status=o.status,
        failure_kind=o.failure_kind,
        items=tuple(items),
        finished_at=record.finished_at or dt.datetime.now(dt.UTC),
    )


@dataclass
class UsageLines:
    """The usage ledger as read: every whole line, and the problems met (a torn last line from a
    killed run is dropped silently; a newer schema or an invalid line is named)."""

    records: list[UsageRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_usage(path: Path) -> UsageLines:
    """Read a usage.jsonl; a missing file is an empty ledger (runs written before it existed)."""
    out = UsageLines()
    if not path.exists():
        return out
    data = path.read_bytes()
    for n, raw in enumerate(data.splitlines(keepends=True), start=1):
        if not raw.endswith(b"\n"):
            break  # torn by a kill mid-write; the call is placed again on resume
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            out.problems.append(f"{path}:{n}: invalid JSON ({exc.msg})")
            continue
        version = obj.get("schema_version") if isinstance(obj, dict) else None
        if isinstance(version, int) and version > USAGE_SCHEMA_VERSION:
            out.problems.append(
                f"{path}:{n}: usage schema {version} is newer than this voice-audit reads "
                f"({USAGE_SCHEMA_VERSION}); upgrade voice-audit"
            )
            continue
        try:
            out.records.append(UsageRecord.model_validate(obj))
        except ValidationError as exc:
            out.problems.append(f"{path}:{n}: invalid usage record: {exc.errors()[0]['msg']}")
    return out


class UsageLedger:
    """Appends ledger lines: one O_APPEND write each (whole even if the process dies right after),
    flushed to the file at once; `close` syncs to disk."""

    def __init__(self, run_dir: Path) -> None:
        self.path = usage_jsonl(run_dir)
        self._fd: int | None = None

    def append(self, record: UsageRecord) -> None:
        line = record.model_dump_json().encode() + b"\n"
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, line)

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


__all__ = ["UsageLedger", "UsageLines", "call_usage", "read_usage"]
