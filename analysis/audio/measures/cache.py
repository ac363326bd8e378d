"""The on-disk cache of the audio pass (`runlog.AUDIO_MEASURES_JSON` in the run folder): each file's measures under
its sha256, valid for one measure version and one set of parameters, so a re-analysis reads the
cache instead of the audio."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from voice_audit.analysis.audio.measures.model import AudioParams, FileMeasures
from voice_audit.harness.runlog import atomic_write_json
from voice_audit.scenarios.filehash import file_sha256

CACHE_SCHEMA = "voice-audit/audio-measures"
# 2: PYIN by voice_audit.analysis.audio.pyin (the same track), activity and onsets of both channels
MEASURE_VERSION = 2


def params_key(params: AudioParams) -> str:
    return hashlib.sha256(json.dumps(params.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[
        :16
    ]


def read_cache(path: Path, key: str) -> dict[str, FileMeasures]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != CACHE_SCHEMA
        or doc.get("version") != MEASURE_VERSION
    ):
        return {}
    if doc.get("params_key") != key:
        return {}
    out: dict[str, FileMeasures] = {}
    for sha, entry in (doc.get("files") or {}).items():
        try:
            out[str(sha)] = FileMeasures.model_validate(entry)
        except ValueError:
            continue
    return out


def file_sha(path: str) -> str | None:
    """The file's SHA-256, or None when it cannot be read."""
    try:
        return file_sha256(path)
    except OSError:
        return None


def covers(m: FileMeasures, codec: bool, pair: bool) -> bool:
    return (not codec or m.codec_ok is not None) and (not pair or m.has_pair or not m.agent_usable)


def merge(old: FileMeasures | None, new: FileMeasures) -> FileMeasures:
    """A cached entry keeps the measures a later, narrower request did not make again."""
    if old is None or old.sha256 != new.sha256:
        return new
    keep = {k: v for k, v in old.model_dump().items() if v is not None}
    fresh = {k: v for k, v in new.model_dump().items() if v is not None}
    return FileMeasures.model_validate({**keep, **fresh, "has_pair": old.has_pair or new.has_pair})


def save_cache(path: Path, key: str, params: AudioParams, cached: dict[str, FileMeasures]) -> None:
    atomic_write_json(
        path,
        {
            "schema": CACHE_SCHEMA,
            "version": MEASURE_VERSION,
            "params_key": key,
            "params": params.model_dump(mode="json"),
            "files": {sha: m.model_dump(mode="json") for sha, m in sorted(cached.items())},
        },
    )
