"""`analyze(run_dir)`: run folder -> metrics, pairs, gates, deltas, disposition, all written atomically.

Outputs in the run folder (each carries the plan sha256; every delta states a - b):
metrics.parquet (one row per episode record), pairs.parquet (one row per pair_id, parity and
claim columns), gates.json, deltas.json, disposition.json, audit_instances.jsonl (each analysed
pair as an audit instance, `voice_audit.analysis.instances`), and analysis.json (the summary: what was read,
what was dropped and why, stage timings).
"""

from __future__ import annotations

import io
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from voice_audit.analysis import disposition as disp
from voice_audit.analysis.deltas import deltas as compute_deltas
from voice_audit.analysis.gates import (
    AudioPass,
    GateInputs,
    GateReport,
    evaluate,
    gates_json,
    library_for,
    measure_audio,
)
from voice_audit.analysis.instances import write_instances
from voice_audit.analysis.metrics import quality
from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.metrics.extract import extract_metrics
from voice_audit.analysis.metrics.ingest import Ingested, Problem, ingest
from voice_audit.analysis.metrics.voice_latency import COLUMNS as V2V_COLUMNS
from voice_audit.analysis.metrics.voice_latency import voice_latency
from voice_audit.analysis.pairs import build_pairs
from voice_audit.analysis.plan import DEFAULT_PLAN, AnalysisPlan, load_plan
from voice_audit.analysis.stats import CONVENTION, CONVENTION_SENTENCE
from voice_audit.harness.runlog import (
    ANALYSIS_JSON,
    DELTAS_JSON,
    DISPOSITION_JSON,
    GATES_JSON,
    METRICS_PARQUET,
    PAIRS_PARQUET,
    atomic_write_bytes,
    atomic_write_json,
)
from voice_audit.scenarios import Scenario, ScenarioLibrary
from voice_audit.scenarios.errors import VoiceAuditError


@dataclass
class AnalysisResult:
    run_dir: Path
    plan: AnalysisPlan
    metrics: pd.DataFrame
    pairs: pd.DataFrame
    gates: GateReport
    deltas: dict[str, Any]
    disposition: dict[str, Any]
    summary: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def plan_sha256(self) -> str:
        return self.plan.sha256


class _Timer:
    def __init__(self) -> None:
        self.stages: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - t0


def load_scenarios(
    ing: Ingested, library: ScenarioLibrary | None
) -> tuple[dict[str, Scenario | None], list[Problem]]:
    out: dict[str, Scenario | None] = {}
    problems: list[Problem] = []
    current: dict[str, tuple[Path, Scenario]] = {}
    if library is not None:
        try:
            current = library.load_all()
        except VoiceAuditError as exc:
            problems.append(Problem(category="scenario_unloadable", message=str(exc)))
    for sid in sorted(set(ing.manifest.scenario_hashes) | set(ing.episodes["scenario_id"].dropna())):
        found = current.get(str(sid))
        out[str(sid)] = found[1] if found else None
        if found is None:
            problems.append(
                Problem(
                    category="scenario_missing",
                    message=f"scenario '{sid}' not found in {library.directory if library else 'any library'}; acceptability, privacy and policy checks are missing for it",
                )
            )
    return out, problems


def episode_metrics(
    ing: Ingested, scenarios: dict[str, Scenario | None], plan: AnalysisPlan, labels: quality.Labels
) -> pd.DataFrame:
    """The ingest frame joined with every metric family; non-analysable episodes keep NaN metrics."""
    m = extract_metrics(
        ing.table, ing.episodes, scenarios, error_classifications=plan.repair.error_classifications
    )
    frame = ing.episodes.join(m, on="episode_id")
    q = quality.extract(labels, pd.Index(frame["episode_id"]))
    frame = pd.concat([frame, q.set_axis(frame.index)], axis=1)
    frame["speech_f0_median_hz"] = np.nan
    failed = frame["status"] != "completed"
    outcome_cols = [c for c in frame.columns if c.startswith("outcome_") and c not in ("outcome_source",)]
    for c in outcome_cols:
        frame.loc[failed, c] = None if frame[c].dtype == object else np.nan
    analysable = frame["analysable"] == True  # noqa: E712
    frame["outcome_matches_record"] = np.where(
        analysable & ~failed,
        (frame["outcome_terminal"].fillna("") == frame["record_outcome"].fillna("")).astype(float),
        np.nan,
    )
    return frame


def _with_voice_latency(metrics: pd.DataFrame, ing: Ingested, measured: AudioPass | None) -> pd.DataFrame:
    """Voice-to-voice latency from the run's audio pass; missing (never zero) when audio is not analysed."""
    if measured is not None and len(ing.table.episodes):
        files = (
            ing.episodes["audio_file"] if "audio_file" in ing.episodes.columns else pd.Series(dtype=object)
        )
        by_path = {measured.files[e]: m for e, m in measured.measures.items()}
        v2v = voice_latency(ing.table, files, ing.run_dir, measures=by_path)
    else:
        v2v = pd.DataFrame(columns=list(V2V_COLUMNS), dtype=float)
    out = metrics.drop(columns=[c for c in V2V_COLUMNS if c in metrics.columns])
    joined = out.join(v2v.reindex(out["episode_id"]).set_axis(out.index))
    return joined.astype({c: float for c in V2V_COLUMNS})


def _parquet(df: pd.DataFrame, plan_sha: str) -> bytes:
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    meta = {
        **(table.schema.metadata or {}),
        b"voice_audit.plan_sha256": plan_sha.encode(),
        b"voice_audit.convention": CONVENTION.encode(),
    }
    buf = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(meta), buf)
    return buf.getvalue()


def summarise(
    ing: Ingested,
    metrics: pd.DataFrame,
    pairs: pd.DataFrame,
    problems: list[Problem],
    plan: AnalysisPlan,
    report: GateReport,
) -> dict[str, Any]:
    analysable = metrics[metrics["analysable"] == True]  # noqa: E712
    numeric = [c for c in metrics.columns if c in CATALOGUE and CATALOGUE[c].kind != "label"]
    all_missing = sorted(c for c in numeric if len(analysable) and analysable[c].isna().all())
    n_records = len(metrics) + sum(1 for p in problems if p.category == "duplicate_record")
    return {
        "plan_sha256": plan.sha256,
        "plan_name": plan.name,
        "run_id": ing.manifest.run_id,
        "convention": CONVENTION,
        "convention_text": CONVENTION_SENTENCE,
        "episodes": {
            "planned": ing.manifest.n_planned_episodes,
            "records_read": n_records,
            "distinct": len(metrics),
            "analysable": len(analysable),
            "status": metrics["status"].value_counts().to_dict(),
        },
        "dropped": {
            "problems_by_category": dict(Counter(p.category for p in problems)),
            "episodes_without_readable_events": int((metrics["analysable"] != True).sum()),  # noqa: E712
            "pairs_excluded_from_deltas": pairs.loc[~pairs["included"], "exclusion_reason"]
            .value_counts()
            .to_dict(),
        },
        "pairs": {
            "total": len(pairs),
            "included": int(pairs["included"].sum()),
            "parity_violations": int((pairs["parity_violation"] == 1.0).sum()),
            "outcome_differs": int((pairs["outcome_equal"] == 0.0).sum()),
        },
        "metrics_all_missing": all_missing,
        "gates": {r.gate: r.verdict for r in report.results},
        "problems": [p.model_dump() for p in problems[:200]],
        "problems_truncated": max(0, len(problems) - 200),
    }


def analyze(
    run_dir: str | Path,
    *,
    plan: AnalysisPlan | str | Path | None = None,
    scenario_dir: str | Path | None = None,
    audio: bool = True,
    write: bool = True,
    seed: int = 0,
    workers: int | None = None,
) -> AnalysisResult:
    """Analyse one run folder. A newer schema is refused (SchemaVersionError); everything else that is
    wrong is reported in the summary while the valid remainder is analysed. `workers`: processes
    reading events files (default one per CPU, used for large runs only)."""
    timer = _Timer()
    with timer.stage("ingest"):
        ing = ingest(run_dir, workers=workers)
    return analyze_ingested(
        ing, plan=plan, scenario_dir=scenario_dir, audio=audio, write=write, seed=seed, timer=timer
    )


def analyze_ingested(
    ing: Ingested,
    *,
    plan: AnalysisPlan | str | Path | None = None,
    scenario_dir: str | Path | None = None,
    audio: bool = True,
    write: bool = True,
    seed: int = 0,
    timer: _Timer | None = None,
) -> AnalysisResult:
    """Everything after reading the folder (the benchmark feeds synthetic tables in here)."""
    timer = timer or _Timer()
    with timer.stage("plan"):
        the_plan = plan if isinstance(plan, AnalysisPlan) else load_plan(plan or DEFAULT_PLAN)
    with timer.stage("scenarios+labels"):
        library = library_for(ing, scenario_dir)
        scenarios, sc_problems = load_scenarios(ing, library)
        labels = quality.read_labels(ing.run_dir)
    problems = [
        *ing.problems,
        *sc_problems,
        *(Problem(category="label_skipped", message=s) for s in labels.skipped),
    ]
    with timer.stage("metrics"):
        metrics = episode_metrics(ing, scenarios, the_plan, labels)
    with timer.stage("audio pass"):  # every recording read once: gates, F0 and voice-to-voice latency
        measured = (
            measure_audio(ing.run_dir, metrics, the_plan, seed) if audio and len(ing.table.episodes) else None
        )
    with timer.stage("voice latency"):
        metrics = _with_voice_latency(metrics, ing, measured)
    with timer.stage("pairs"):
        pairs = build_pairs(metrics)
    with timer.stage("gates"):
        report, f0 = evaluate(
            GateInputs(
                ing=ing,
                episodes=metrics,
                pairs=pairs,
                scenarios=scenarios,
                library=library,
                labels=labels,
                plan=the_plan,
                audio=audio,
                seed=seed,
                audio_measured=measured,
            )
        )
        metrics["speech_f0_median_hz"] = metrics["episode_id"].map(f0).astype(float)
    with timer.stage("deltas"):
        delta = compute_deltas(metrics, pairs, the_plan)
    with timer.stage("disposition"):
        inst = disp.instances(pairs, report, the_plan)
        pairs = pairs.merge(inst, on="pair_id", how="left").join(
            report.by_pair.add_prefix("gate_"), on="pair_id"
        )
        dispo = disp.disposition(
            pairs.drop(columns=["claim", "supported_families", "claim_drivers"]), inst, report, the_plan
        )
    summary = summarise(ing, metrics, pairs, problems, the_plan, report)
    # one column at a time above leaves the frame in many blocks: consolidate once before adding more
    metrics = metrics.copy().assign(plan_sha256=the_plan.sha256)
    pairs = pairs.assign(plan_sha256=the_plan.sha256, convention=CONVENTION)
    if write:
        with timer.stage("write"):
            out = ing.run_dir
            atomic_write_bytes(out / METRICS_PARQUET, _parquet(metrics, the_plan.sha256))
            atomic_write_bytes(out / PAIRS_PARQUET, _parquet(pairs, the_plan.sha256))
            atomic_write_json(out / GATES_JSON, gates_json(report, the_plan.sha256))
            atomic_write_json(out / DELTAS_JSON, delta)
            atomic_write_json(out / DISPOSITION_JSON, dispo)
            write_instances(out, pairs, metrics, the_plan)
    summary["timings_s"] = {k: round(v, 4) for k, v in timer.stages.items()}
    if write:
        atomic_write_json(ing.run_dir / ANALYSIS_JSON, summary)
    return AnalysisResult(
        run_dir=ing.run_dir,
        plan=the_plan,
        metrics=metrics,
        pairs=pairs,
        gates=report,
        deltas=delta,
        disposition=dispo,
        summary=summary,
        timings=timer.stages,
    )
