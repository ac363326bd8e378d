"""Read what `voice-audit run` and `voice-audit analyze` left in a run folder, and nothing more.

Audio is not touched here: the report copies only the recordings of the pairs it shows, later.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.harness.model import RunManifest
from voice_audit.harness.runlog import (
    ANALYSIS_JSON,
    ANALYSIS_OUTPUTS,
    DELTAS_JSON,
    DISPOSITION_JSON,
    EPISODES_JSONL,
    GATES_JSON,
    METRICS_PARQUET,
    PAIRS_PARQUET,
    RunReader,
    episodes_jsonl,
)
from voice_audit.scenarios.errors import VoiceAuditError


class ReportInputError(VoiceAuditError):
    """The run folder lacks the analysis outputs a report is built from."""


@dataclass
class RunOutputs:
    run_dir: Path
    reader: RunReader
    manifest: RunManifest
    metrics: pd.DataFrame
    pairs: pd.DataFrame
    gates: dict[str, Any]
    deltas: dict[str, Any]
    disposition: dict[str, Any]
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object")
    return data


def _count_records(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def consistency_warnings(out: RunOutputs) -> list[str]:
    """Outputs from different analyses, or a run that grew after it was analysed."""
    warns: list[str] = []
    shas = {
        GATES_JSON: out.gates.get("plan_sha256"),
        DELTAS_JSON: out.deltas.get("plan_sha256"),
        DISPOSITION_JSON: out.disposition.get("plan_sha256"),
        ANALYSIS_JSON: out.summary.get("plan_sha256"),
    }
    if "plan_sha256" in out.pairs.columns and len(out.pairs):
        shas[PAIRS_PARQUET] = str(out.pairs["plan_sha256"].iloc[0])
    if len({v for v in shas.values() if v}) > 1:
        warns.append(
            f"analysis outputs come from different analysis plans: {shas}; re-run voice-audit analyze"
        )
    read = out.summary.get("episodes", {}).get("records_read")
    now = _count_records(episodes_jsonl(out.run_dir))
    if isinstance(read, int) and read != now:
        warns.append(
            f"{EPISODES_JSONL} now holds {now} records but the analysis read {read}; re-run voice-audit analyze"
        )
    return warns


def load(run_dir: str | Path) -> RunOutputs:
    run = Path(run_dir)
    reader = RunReader(run)
    missing = [f for f in ANALYSIS_OUTPUTS if not (run / f).exists()]
    if missing:
        raise ReportInputError(
            f"{run}: analysis outputs missing ({', '.join(missing)}); run: voice-audit analyze {run}"
        )
    out = RunOutputs(
        run_dir=run,
        reader=reader,
        manifest=reader.manifest,
        metrics=pd.read_parquet(run / METRICS_PARQUET),
        pairs=pd.read_parquet(run / PAIRS_PARQUET),
        gates=_json(run / GATES_JSON),
        deltas=_json(run / DELTAS_JSON),
        disposition=_json(run / DISPOSITION_JSON),
        summary=_json(run / ANALYSIS_JSON),
    )
    out.warnings = consistency_warnings(out)
    return out
