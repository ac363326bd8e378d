"""Read an episode record written before the non-service taxonomy as the current runtime writes it.

Schema version 1 recorded a call the agent did not serve (it disconnected, sent garbage, could not
be reached, reported its own error) as `failed` with that agent-side failure kind: missing data, so
the pair left the deltas and the worst thing an agent can do to a caller left the audit with it.
Version 2 writes such a call as what it is: `completed`, terminal outcome `unresolved`, the kind's
non-service flag among the outcome flags, and in its events a `non_service` event right after the
fatal error, with the hang-up that follows put on the agent. A version 1 record and its events are
read as exactly that; the flag comes from `voice_audit.harness.model.non_service_flag`, the mapping the
runtime itself uses, so the two cannot drift. Burden counts are the logged ones (no caller turn is
added or dropped). The record keeps its `events_sha256` and `n_events`: they describe the file on
disk, which is not rewritten. The frame says which records were read this way
(`upgraded_from_schema`).

Harness-side and caller-voice version 1 failures stay missing data, a turn timeout included:
version 1 had no caller patience, so its timeout cannot be told apart from a stuck harness.

Before version 3 a record's `turns` counted one more than the caller turns spoken when the caller
hung up without a line (a decision to hang up took a turn number). The caller turns spoken are in
the events (one `caller_utterance_start` each), so a reader of an older record that has its events
recounts them (`spoken_turns`); the events file is not rewritten.

Before version 4 a record did not say who voiced the caller (`speaker`): analysis then takes the
realisation (condition and voice index) as the voice, as it did when those records were written.
"""

from __future__ import annotations

from collections.abc import Sequence

from voice_audit.harness.model import EpisodeRecord, ErrorEvent, Event, HangUp, NonService, non_service_flag

NON_SERVICE_SCHEMA = 2
"""First schema version that writes agent-side non-service as an outcome."""
SPOKEN_TURNS_SCHEMA = 3
"""First schema version whose `turns` counts only the caller turns spoken."""
SPEAKER_SCHEMA = 4
"""First schema version whose records name the caller's speaker (`header.speaker`)."""
SPOKEN_TURN_EVENT = "caller_utterance_start"
"""The event that marks one caller turn spoken."""


def upgrade_record(rec: EpisodeRecord) -> tuple[EpisodeRecord, int | None]:
    """The record as the current schema writes it, and the version it was upgraded from (None when
    it needed no change)."""
    out = rec.outcome
    if rec.schema_version >= NON_SERVICE_SCHEMA or out.status != "failed" or out.failure_kind is None:
        return rec, None
    flag = non_service_flag(out.failure_kind)
    if flag is None:  # the harness's or the caller's voice's own failure: missing data
        return rec, None
    served = out.model_copy(
        update={
            "status": "completed",
            "terminal_outcome": "unresolved",
            "outcome_flags": tuple(sorted({*out.outcome_flags, flag})),
        }
    )
    return rec.model_copy(update={"outcome": served}), rec.schema_version


def upgrade_events(events: Sequence[Event]) -> list[Event]:
    """Version 1 events of a call an agent-side failure ended, as version 2 logs them: a
    `non_service` event after the last fatal error, and the harness's hang-up for that error put on
    the agent with the flag as its reason. A log that already says non-service, or whose last fatal
    error is not the agent's, is returned as it is."""
    if any(isinstance(e, NonService) for e in events):
        return list(events)
    at = next((i for i in range(len(events) - 1, -1, -1) if _fatal(events[i])), None)
    if at is None:
        return list(events)
    error = events[at]
    assert isinstance(error, ErrorEvent)
    flag = non_service_flag(error.kind)
    if flag is None:
        return list(events)
    out: list[Event] = [
        *events[: at + 1],
        NonService(t_ms=error.t_ms, reason=flag, kind=error.kind, message=error.message),
    ]
    for e in events[at + 1 :]:
        if isinstance(e, HangUp) and e.by == "harness" and e.reason == error.kind:
            e = HangUp(t_ms=e.t_ms, by="agent", reason=flag)
        out.append(e)
    return out


def _fatal(e: Event) -> bool:
    return isinstance(e, ErrorEvent) and e.fatal


def spoken_turns(events: Sequence[Event]) -> int:
    """The caller turns spoken in a call: what `turns` holds from version 3 on."""
    return sum(1 for e in events if e.type == SPOKEN_TURN_EVENT)
