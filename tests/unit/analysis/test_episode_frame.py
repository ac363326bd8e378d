"""The column-wise episode frame (from `record_row` tuples) equals a frame built from one dict per
record, for every kind of record: failed calls, exposure recorded or not, empty and repeated
tuples, variant None, records with and without a speaker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.metrics._episodes import AXES, COLUMNS, episode_frame
from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.runlog import record_row

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden" / "episodes.jsonl"
EXPOSURE = {
    "protocol": "websocket",
    "turn_based": True,
    "streaming": False,
    "transcripts": False,
    "tool_trace": True,
    "fact_provisioning": True,
    "input_encoding": "pcm16",
    "input_sample_rate": 16000,
}


def _reference_row(rec: EpisodeRecord) -> dict[str, object]:
    """What ingest built per record before the frame went column-wise."""
    h, o = rec.header, rec.outcome
    cond = {a: getattr(h.condition, a, None) for a in AXES}
    key = "|".join(f"{a}={cond.get(a)}" for a in AXES)
    exp = h.exposure
    return {
        "episode_id": h.episode_id,
        "run_id": h.run_id,
        "pair_id": h.pair_id,
        "side": h.side,
        "caller_id": h.caller_id,
        "attempt": h.attempt,
        "scenario_id": h.scenario_id,
        "scenario_version": h.scenario_version,
        "scenario_sha256": h.scenario_sha256,
        "facts_sha256": h.facts_sha256,
        "campaign_sha256": h.campaign_sha256,
        "run_plan_sha256": h.plan_sha256,
        "agent": h.agent,
        "architecture": h.architecture,
        "adapter": h.adapter,
        "condition_key": key,
        "contrast": ",".join(h.contrast),
        "voice_index": h.voice_index,
        "voice_id": h.speaker or f"{key}#v{h.voice_index}",
        "speaker": h.speaker,
        "tts_voice": f"{h.speech.voice}:{h.speech.variant}",
        "seed": h.seed,
        "replicate": h.replicate,
        "run_batch": h.run_batch,
        "pacing": h.pacing,
        "status": o.status,
        "failure_kind": o.failure_kind,
        "termination": o.termination,
        "record_outcome": o.terminal_outcome,
        "record_flags": ",".join(o.outcome_flags),
        "facts_sha256_seen": o.facts_sha256_seen,
        "duration_ms": o.duration_ms,
        "turns": o.turns,
        "n_events": o.n_events,
        "events_sha256": o.events_sha256,
        "audio_file": o.audio_file,
        "audio_sample_rate": o.audio_sample_rate,
        **{f"cond_{a}": cond.get(a) for a in AXES},
        "exposure_protocol": exp.protocol if exp is not None else None,
        "exposure_tool_trace": float(exp.tool_trace) if exp is not None else float("nan"),
        "exposure_transcripts": float(exp.transcripts) if exp is not None else float("nan"),
    }


def _reference(records: list[EpisodeRecord]) -> pd.DataFrame:
    frame = pd.DataFrame([_reference_row(r) for r in records], columns=list(COLUMNS))
    frame = frame.set_index("episode_id", drop=False)
    frame.index.name = None
    return frame


def _golden() -> list[dict[str, Any]]:
    return [json.loads(x) for x in GOLDEN.read_text().splitlines()]


def _varied() -> list[EpisodeRecord]:
    out: list[EpisodeRecord] = []
    for i, raw in enumerate(_golden() * 3):
        h, o = raw["header"], raw["outcome"]
        h["episode_id"] = f"{h['episode_id']}-{i}"
        if i % 3 == 1:
            h["exposure"] = {**EXPOSURE, "tool_trace": bool(i % 2)}
            h["speech"] = {**h["speech"], "variant": None}
            h["contrast"] = ["accent", "affect"]
            o["outcome_flags"] = ["handoff", "denied"]
        if i % 3 == 2:  # a record naming its speaker (schema 4): the speaker is the voice
            h["speaker"] = "cmu-rms"
            h["speaker_gender"] = "male"
        if i % 4 == 2:
            o.update(
                status="failed",
                failure_kind="timeout_call",
                terminal_outcome=None,
                facts_sha256_seen=None,
                audio_file=None,
                audio_sample_rate=None,
            )
        out.append(EpisodeRecord.model_validate(raw))
    return out


def test_frame_matches_the_per_record_reference() -> None:
    records = _varied()
    got = episode_frame([record_row(r) for r in records])
    pd.testing.assert_frame_equal(got, _reference(records), check_exact=True)
    assert got["exposure_protocol"].notna().any() and got["exposure_protocol"].isna().any()
    assert (got["status"] == "failed").any() and got["audio_sample_rate"].isna().any()
    assert got["tts_voice"].str.endswith(":None").any()
    assert set(got["contrast"]) == {"accent", "accent,affect"}
    named = got["speaker"].notna()
    assert named.any() and (~named).any()
    assert (got.loc[named, "voice_id"] == "cmu-rms").all()
    assert got.loc[~named, "voice_id"].str.contains("#v").all()


def test_columns_with_no_value_keep_the_reference_dtypes() -> None:
    records = [EpisodeRecord.model_validate(r) for r in _golden()]
    got = episode_frame([record_row(r) for r in records])
    pd.testing.assert_frame_equal(got, _reference(records), check_exact=True)
    assert got["exposure_protocol"].dtype == object and got["failure_kind"].dtype == object


def test_no_records_give_the_reference_empty_frame() -> None:
    got = episode_frame([])
    pd.testing.assert_frame_equal(got, _reference([]), check_exact=True)
    assert list(got.columns) == list(COLUMNS) and got.empty
