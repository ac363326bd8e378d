"""Schema versions of what voice-audit writes; readers accept older ones and refuse newer ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voice_audit.scenarios.errors import SchemaVersionError

SCHEMA_VERSION = 4


def check_schema_version(found: Any, where: str | Path) -> int:
    """Validate a `schema_version` field read from `where`; newer than ours is refused with the fix."""
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        raise SchemaVersionError(
            f"{where}: missing or invalid schema_version {found!r}; not a voice-audit file"
        )
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where}: schema_version {found} was written by a newer voice-audit (this one reads up to "
            f"{SCHEMA_VERSION}); upgrade with: pip install -U voice-audit"
        )
    return found


def upgrade(data: dict[str, Any], kind: str) -> dict[str, Any]:
    """Bring an older record up to the current schema.

    Version 2 added the non-service outcome (completed calls the agent did not serve carry the
    agent-side `failure_kind` and a `non_service` event) and the patience, silence, barge-in and
    yield events. Version 3 counts in `turns` only the caller turns spoken: earlier versions counted
    one more when the caller hung up without a line (analysis recounts those from the events,
    `voice_audit.harness.runlog.compat`). Version 4 records who voiced the caller (`speaker`,
    `speaker_gender`); an older record reads without them and analysis falls back to the
    realisation (condition and voice index). Older records read unchanged here."""
    del kind
    return data
