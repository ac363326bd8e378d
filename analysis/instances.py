"""audit_instances.jsonl: every analysed matched pair as METHOD's audit instance A = (S, C, R, L, T).

One line per pair and agent (a pair id names both), built from the pairs table and the episode
frame: the locked scenario (S), the two caller conditions and the voice (C), the architecture (R),
the two calls' logs (L: paths relative to the run folder, so the folder can move, and the events
hash) and the claim template (T: the a - b comparison, the plan's metric families, the ones whose
gates passed and the claim the pair supports alone, with what limited it). An instance needs both
calls' logs: a pair with a side never recorded or no readable events log has none and stays in
pairs.parquet with its exclusion reason. A pair that left the deltas for another reason (a
harness-side failure) is an instance with claim `diagnostics_only`.

Every line carries `schema_version`; `read_instances` refuses a newer one with one line, like
every reader of a run folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import TypeAdapter, ValidationError

from voice_audit.analysis.metrics.readlogs import gc_paused
from voice_audit.analysis.plan import AnalysisPlan
from voice_audit.harness.model import AuditInstance, check_schema_version
from voice_audit.harness.runlog import AUDIT_INSTANCES_JSONL as AUDIT_INSTANCES
from voice_audit.harness.runlog import atomic_write_bytes, events_ref
from voice_audit.personas import AXES
from voice_audit.scenarios.errors import VoiceAuditError


class InstanceFileError(VoiceAuditError):
    """audit_instances.jsonl is missing or a line of it is not a valid audit instance."""


def instance_id(run_id: str, pair_id: str, agent: str) -> str:
    """Unique across runs, so instances of pooled runs do not collide."""
    return hashlib.sha256(f"instance|{run_id}|{pair_id}|{agent}".encode()).hexdigest()[:16]


_INSTANCES: TypeAdapter[list[AuditInstance]] = TypeAdapter(list[AuditInstance])
_PAIR_LEVEL = (
    "run_id",
    "agent",
    "scenario_id",
    "scenario_version",
    "scenario_sha256",
    "contrast",
    "voice_index",
    "replicate",
    "run_batch",
    "architecture",
)
_SIDE = ("episode_id", "events_sha256", "audio_file", "status", "upgraded_from_schema", "analysable")


def _relative_audio(base: str, value: object) -> str | None:
    """The record's recording path when it is a path inside the run folder (`base`) that exists.
    Plain strings: a Path per call costs tens of microseconds, seconds over a large run."""
    if not isinstance(value, str) or not value or value.startswith("/") or ".." in value.split("/"):
        return None
    return value if os.path.isfile(f"{base}{os.sep}{value}") else None


def _split(value: object, sep: str) -> list[str]:
    return [v.strip() for v in value.split(sep) if v.strip()] if isinstance(value, str) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def audit_instances(
    pairs: pd.DataFrame, episodes: pd.DataFrame, plan: AnalysisPlan, run_dir: Path
) -> list[AuditInstance]:
    """`pairs`: the pairs table with the disposition's per-pair columns (`claim`,
    `supported_families`, `claim_drivers`); `episodes`: the episode frame with the metrics.
    Built column-wise and validated in one pass, the garbage collector paused (nothing here forms
    cycles, and its full passes over a large run's heap cost seconds)."""
    with gc_paused():
        return _instances(pairs, episodes, plan, run_dir)


def _instances(
    pairs: pd.DataFrame, episodes: pd.DataFrame, plan: AnalysisPlan, run_dir: Path
) -> list[AuditInstance]:
    conds = [f"cond_{a}" for a in AXES]
    if "upgraded_from_schema" not in episodes.columns:
        episodes = episodes.assign(upgraded_from_schema=None)
    narrow = list(dict.fromkeys((*_SIDE, *conds, *_PAIR_LEVEL)))
    eps = episodes[narrow].drop_duplicates("episode_id", keep="last").set_index("episode_id", drop=False)
    side: dict[str, dict[str, list[Any]]] = {}
    for s in ("a", "b"):
        ids = pairs[f"episode_id_{s}"].astype(object)
        part = eps.reindex(ids.where(ids.isin(eps.index), None))
        side[s] = {c: part[c].astype(object).tolist() for c in narrow}
    cols = {
        c: pairs[c].astype(object).tolist() if c in pairs.columns else [None] * len(pairs)
        for c in ("pair_id", "claim", "supported_families", "claim_drivers")
    }
    families = list(plan.families)
    plan_sha = plan.sha256
    base = str(run_dir)
    found: list[dict[str, Any]] = []
    for i in range(len(pairs)):
        if not all(side[s]["analysable"][i] is True for s in ("a", "b")):
            continue  # a side never recorded, or without a readable events log: no L for it
        a = {c: side["a"][c][i] for c in _PAIR_LEVEL}
        refs = {}
        for s in ("a", "b"):
            eid = side[s]["episode_id"][i]
            upgraded = side[s]["upgraded_from_schema"][i]
            refs[s] = {
                "episode_id": eid,
                "events": events_ref(eid),
                "events_sha256": side[s]["events_sha256"][i],
                "audio": _relative_audio(base, side[s]["audio_file"][i]),
                "status": side[s]["status"][i],
                "upgraded_from_schema": None if upgraded is None or pd.isna(upgraded) else int(upgraded),
            }
        found.append(
            {
                "instance_id": instance_id(str(a["run_id"]), str(cols["pair_id"][i]), str(a["agent"])),
                "run_id": a["run_id"],
                "scenario_id": a["scenario_id"],
                "scenario_version": int(a["scenario_version"]),
                "scenario_sha256": a["scenario_sha256"],
                "pair_id": cols["pair_id"][i],
                "condition_a": {ax: side["a"][f"cond_{ax}"][i] for ax in AXES},
                "condition_b": {ax: side["b"][f"cond_{ax}"][i] for ax in AXES},
                "contrast": _split(a["contrast"], ","),
                "voice_index": int(a["voice_index"]),
                "replicate": int(a["replicate"]),
                "run_batch": a["run_batch"],
                "architecture": _text(a["architecture"]),
                "agent": a["agent"],
                "artifact_a": refs["a"],
                "artifact_b": refs["b"],
                "claim_template": {
                    "plan_sha256": plan_sha,
                    "metric_families": families,
                    "supported_families": _split(cols["supported_families"][i], ","),
                    "claim": "construct_validation"
                    if cols["claim"][i] == "construct_validation"
                    else "diagnostics_only",
                    "limited_by": _split(cols["claim_drivers"][i], ";"),
                },
            }
        )
    return _INSTANCES.validate_python(found)


def instances_jsonl(instances: Iterable[AuditInstance]) -> bytes:
    with gc_paused():
        return b"".join(i.model_dump_json().encode() + b"\n" for i in instances)


def write_instances(run_dir: Path, pairs: pd.DataFrame, episodes: pd.DataFrame, plan: AnalysisPlan) -> int:
    """Writes audit_instances.jsonl atomically (a reader never sees half of it); returns the count."""
    found = audit_instances(pairs, episodes, plan, run_dir)
    atomic_write_bytes(run_dir / AUDIT_INSTANCES, instances_jsonl(found))
    return len(found)


def read_instances(run_dir: str | Path) -> list[AuditInstance]:
    """Every instance of an analysed run folder; a newer schema_version or an invalid line stops
    with one line naming the file and line."""
    path = Path(run_dir) / AUDIT_INSTANCES
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        raise InstanceFileError(f"{path}: missing; run: voice-audit analyze {run_dir}") from None
    out: list[AuditInstance] = []
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            data: Any = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InstanceFileError(f"{where}: invalid JSON ({exc.msg})") from None
        check_schema_version(data.get("schema_version") if isinstance(data, dict) else None, where)
        try:
            out.append(AuditInstance.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"])
            raise InstanceFileError(
                f"{where}: invalid audit instance ({field}: {err['msg']}); re-run: voice-audit analyze {run_dir}"
            ) from None
    return out
