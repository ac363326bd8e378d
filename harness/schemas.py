"""JSON Schemas of every file format voice-audit reads or writes."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, TypeAdapter

from voice_audit.harness.model import AuditInstance, Campaign, EpisodeRecord, Event, RunManifest
from voice_audit.harness.model.usage import UsageRecord
from voice_audit.harness.runlog import atomic_write_bytes
from voice_audit.scenarios import Scenario


def schema_documents() -> dict[str, dict[str, object]]:
    models: dict[str, type[BaseModel]] = {
        "scenario": Scenario,
        "campaign": Campaign,
        "episode": EpisodeRecord,
        "run": RunManifest,
        "audit_instance": AuditInstance,
        "usage": UsageRecord,
    }
    docs = {name: model.model_json_schema() for name, model in models.items()}
    docs["event"] = TypeAdapter(Event).json_schema()
    for name, doc in docs.items():
        doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        doc["$id"] = f"https://voice-audit.dev/schemas/{name}.schema.json"
    return docs


def write_schemas(out: Path) -> list[Path]:
    written = []
    for name, doc in schema_documents().items():
        path = out / f"{name}.schema.json"
        atomic_write_bytes(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())
        written.append(path)
    return written
