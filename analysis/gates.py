"""The validation gates: the seven of METHOD.md section 3 and the differential-failure gate of
section 8 (harness-side missing data unbalanced between conditions); pass / fail / not-evaluable,
with evidence.

Each gate gives a run-level verdict and a verdict per pair (the audit instance), so disposition can
say which gate kept which pair or cell from supporting a claim. Thresholds come from the frozen
plan. Audio checks run on a capped, seeded sample of recordings (the cap is in the plan and the
evidence says how many were checked).
"""

from __future__ import annotations

import errno
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from analysis import missingness, observer_gate
from analysis.metrics import audio_measures
from analysis.metrics.catalogue import QUALITY_LABELS
from analysis.metrics.ingest import Ingested
from analysis.metrics.quality import Labels
from analysis.metrics.table import map_unique
from analysis.plan import AnalysisPlan
from scenarios import Scenario, ScenarioLibrary
from scenarios.base import Frozen
from scenarios.errors import VoiceAuditError

log = logging.getLogger(__name__)
Verdict = Literal["pass", "fail", "not-evaluable"]
GATES: tuple[str, ...] = (
    "scenario_lock",
    "fact_invariance",
    "persona_perceptibility",
    "acoustic_validity",
    "codec_normalisation",
    "artifact_completeness",
    "annotation_reliability",
    "differential_failure",
    "observer_validity",
)
_RANK = {"pass": 0, "not-evaluable": 1, "fail": 2}


class GateResult(Frozen):
    gate: str
    verdict: Verdict
    evidence: str
    thresholds: dict[str, Any]
    scope: tuple[str, ...]
    details: dict[str, Any]
    diagnostics: dict[str, Any] = Field(default_factory=dict)


@dataclass
class GateInputs:
    ing: Ingested
    episodes: pd.DataFrame  # ingest frame + metrics, index episode_id
    pairs: pd.DataFrame
    scenarios: Mapping[str, Scenario | None]
    library: ScenarioLibrary | None
    labels: Labels
    plan: AnalysisPlan
    audio: bool = True
    seed: int = 0
    audio_workers: int | None = None  # processes of the audio pass (default: one per CPU)
    audio_measured: AudioPass | None = None  # filled by the first audio gate, shared with the next


@dataclass
class GateReport:
    results: list[GateResult]
    by_pair: pd.DataFrame  # index pair_id, one verdict column per gate

    def result(self, gate: str) -> GateResult:
        return next(r for r in self.results if r.gate == gate)


def worst(values: pd.Series | list[str]) -> Verdict:
    vals = list(values)
    if not vals:
        return "not-evaluable"
    return max(vals, key=lambda v: _RANK[v])


def _pairwise(inp: GateInputs, ep_verdict: pd.Series) -> pd.Series:
    """Worst verdict of a pair's two episodes; a missing side makes it not-evaluable."""
    p = inp.pairs.set_index("pair_id")
    va = p["episode_id_a"].map(ep_verdict).fillna("not-evaluable")
    vb = p["episode_id_b"].map(ep_verdict).fillna("not-evaluable")
    return pd.Series([worst([x, y]) for x, y in zip(va, vb, strict=True)], index=p.index)


def _scope(plan: AnalysisPlan, gate: str) -> tuple[str, ...]:
    return plan.gate_scope.get(gate, ("all",))


def _sample(ids: list[str], cap: int, seed: int) -> list[str]:
    if len(ids) <= cap:
        return ids
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(np.array(ids, dtype=object), size=cap, replace=False).tolist())


# -- 1. scenario lock ---------------------------------------------------------------------------
def scenario_lock(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    man = inp.ing.manifest
    ep = inp.episodes
    per_scenario: dict[str, dict[str, Any]] = {}
    lock = None
    lock_problem = None
    if inp.library is not None:
        try:
            lock = inp.library.read_lock()
        except VoiceAuditError as exc:
            lock_problem = str(exc)
    for sid, run_hash in sorted(man.scenario_hashes.items()):
        checks: dict[str, Any] = {"run_sha256": run_hash}
        sc = inp.scenarios.get(sid)
        sub = ep[ep["scenario_id"] == sid]
        checks["episodes_match_run"] = bool((sub["scenario_sha256"] == run_hash).all())
        checks["facts_match_run"] = bool((sub["facts_sha256"] == man.facts_hashes.get(sid)).all())
        if sc is None or inp.library is None:
            checks["verdict"] = "not-evaluable"
            checks["why"] = "scenario file not found now; cannot verify it is unchanged after collection"
        else:
            entry = lock.scenarios.get(sid) if lock else None
            checks["file_sha256_now"] = sc.sha256
            checks["lock_sha256"] = entry.sha256 if entry else None
            ok = sc.sha256 == run_hash and entry is not None and entry.sha256 == run_hash
            ok = ok and checks["episodes_match_run"] and checks["facts_match_run"]
            checks["verdict"] = "pass" if ok else "fail"
            if not ok:
                checks["why"] = (
                    lock_problem or "hash of the file now, the lock or an episode differs from run.json"
                )
        per_scenario[sid] = checks
    ep_verdict = ep["scenario_id"].map(lambda s: per_scenario.get(str(s), {}).get("verdict", "fail"))
    ep_verdict.index = ep["episode_id"]
    verdict = worst([c["verdict"] for c in per_scenario.values()]) if per_scenario else "not-evaluable"
    bad = {s: c.get("why") for s, c in per_scenario.items() if c["verdict"] != "pass"}
    evidence = (
        f"{len(per_scenario)} scenario(s): hash in run.json = file now = lock file = every episode header"
        + (f"; problems: {bad}" if bad else "")
    )
    res = GateResult(
        gate="scenario_lock",
        verdict=verdict,
        evidence=evidence,
        thresholds={},
        scope=_scope(inp.plan, "scenario_lock"),
        details={"scenarios": per_scenario},
    )
    return res, _pairwise(inp, ep_verdict)


# -- 2. fact invariance -------------------------------------------------------------------------
def fact_invariance(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    table = inp.ing.table
    prov = table.of_type("facts_provisioned")

    def one_hash(rows: pd.DataFrame) -> pd.Series:
        """The episode's provisioned hash; two different ones in one call count as a mismatch."""
        uniq = rows.drop_duplicates(["ep", "sha256"])
        first = uniq.groupby("ep")["sha256"].first()
        conflict = uniq.groupby("ep").size() > 1
        return first.where(~conflict, "conflicting:" + first.astype(str))

    sent = prov[(prov["reported_by_agent"] != 1.0) & prov["disclosed_sha256"].notna()]
    disclosed = table.per_episode(
        sent.drop_duplicates(["ep", "disclosed_sha256"])
        .groupby("ep")["disclosed_sha256"]
        .agg(lambda v: v.iat[0] if len(v) == 1 else "conflicting"),
        None,
    )
    harness = one_hash(prov[prov["reported_by_agent"] != 1.0])
    agent = one_hash(prov[prov["reported_by_agent"] == 1.0])
    h = table.per_episode(harness, None)
    a = table.per_episode(agent, None)
    ep = inp.episodes.set_index("episode_id", drop=False)
    p = inp.pairs.set_index("pair_id")
    ea, eb = p["episode_id_a"], p["episode_id_b"]
    known = ea.isin(h.index) & eb.isin(h.index)
    ha, hb = ea.map(h), eb.map(h)
    aa, ab = ea.map(a), eb.map(a)
    locked = ea.map(ep["facts_sha256"])
    checks = {
        "no facts_provisioned event": ha.isna() | hb.isna(),
        "provisioned facts differ between the two calls": ha.notna() & hb.notna() & (ha != hb),
        "provisioned facts differ from the locked scenario facts": ha.notna() & (ha == hb) & (ha != locked),
        "facts the agent reported seeing differ": aa.notna() & ab.notna() & ((aa != ab) | (aa != ha)),
        "what was sent to the agent differs between the two calls": ea.map(disclosed).notna()
        & eb.map(disclosed).notna()
        & (ea.map(disclosed) != eb.map(disclosed)),
        "tool availability differs": ea.map(ep["tool_available"]).fillna("")
        != eb.map(ep["tool_available"]).fillna(""),
    }
    agent_reported = int((aa.notna() & ab.notna()).sum())
    bad = pd.DataFrame(checks).fillna(False).astype(bool) & known.to_numpy()[:, None]
    any_bad = bad.any(axis=1)
    verdicts = pd.Series(
        np.where(~known, "not-evaluable", np.where(any_bad, "fail", "pass")), index=p.index, dtype=object
    )
    failures = {
        str(pid): "; ".join(c for c in bad.columns if row[c]) for pid, row in bad[any_bad].head(50).iterrows()
    }
    failures_n = int(any_bad.sum())
    s = verdicts
    verdict = worst(list(s.unique())) if len(s) else "not-evaluable"
    evidence = (
        f"{int((s == 'pass').sum())} of {len(s)} pairs: identical facts_provisioned sha256 on both calls, equal to the locked "
        f"facts, equal tool set, the same disclosure sent to the agent; agent-reported hashes compared on {agent_reported} pairs"
    )
    res = GateResult(
        gate="fact_invariance",
        verdict=verdict,
        evidence=evidence,
        thresholds={},
        scope=_scope(inp.plan, "fact_invariance"),
        details={"failing_pairs": failures, "n_failing": failures_n},
    )
    return res, s


# -- 3. persona perceptibility ------------------------------------------------------------------
def separability(inp: GateInputs) -> dict[str, Any]:
    """Diagnostic only: how far apart a and b callers are on caller speaking rate (words/s of the
    caller's utterances) per contrast, as an AUC; 0.5 = indistinguishable on this cue."""
    from scipy.stats import mannwhitneyu

    utt = inp.ing.table.of_type("caller_utterance_start", columns=["ep", "text", "duration_ms"])
    words = map_unique(utt["text"], lambda t: len(t.split()))
    secs = utt["duration_ms"] / 1000.0
    rate = (words.groupby(utt["ep"]).sum() / secs.groupby(utt["ep"]).sum()).replace([np.inf], np.nan)
    r = inp.ing.table.per_episode(rate, None)
    ep = inp.episodes.assign(caller_wps=r.reindex(inp.episodes["episode_id"]).to_numpy())
    out: dict[str, Any] = {}
    for contrast, sub in ep.groupby("contrast"):
        xa = sub.loc[sub["side"] == "a", "caller_wps"].dropna()
        xb = sub.loc[sub["side"] == "b", "caller_wps"].dropna()
        if len(xa) and len(xb):
            u = float(mannwhitneyu(xa, xb).statistic)
            out[str(contrast)] = {
                "cue": "caller words per second",
                "auc": u / (len(xa) * len(xb)),
                "n_a": len(xa),
                "n_b": len(xb),
            }
    return out


def persona_perceptibility(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    from analysis.agreement import perceptibility

    th = inp.plan.gates.perceptibility
    p = inp.pairs.set_index("pair_id")
    ratings = inp.labels.perceptibility
    diag = {"acoustic_separability": separability(inp)}
    if ratings.empty:
        res = GateResult(
            gate="persona_perceptibility",
            verdict="not-evaluable",
            evidence="no perceptibility ratings in ratings/labels.jsonl; acoustic separability reported as a diagnostic only",
            thresholds=th.model_dump(),
            scope=_scope(inp.plan, "persona_perceptibility"),
            details={},
            diagnostics=diag,
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object)
    per_axis = perceptibility(
        ratings, alpha=inp.plan.alpha, min_raters=th.min_raters, min_accuracy=th.min_accuracy
    )
    axis_verdict = {k: v.verdict for k, v in per_axis.items()}
    pair_v = p["contrast"].map(
        lambda c: worst([axis_verdict.get(ax, "not-evaluable") for ax in str(c).split(",") if ax])
    )
    verdict = worst(list(pair_v)) if len(pair_v) else "not-evaluable"
    res = GateResult(
        gate="persona_perceptibility",
        verdict=verdict,
        evidence="; ".join(f"{k}: {v.verdict} ({v.evidence})" for k, v in per_axis.items()),
        thresholds=th.model_dump(),
        scope=_scope(inp.plan, "persona_perceptibility"),
        details={"axes": {k: v.model_dump() for k, v in per_axis.items()}},
        diagnostics=diag,
    )
    return res, pair_v.astype(object)


# -- 4. acoustic validity -----------------------------------------------------------------------
@dataclass
class AudioPass:
    """The one audio pass shared by the acoustic and codec gates (`audio_measures.measure_files`)."""

    measures: dict[str, audio_measures.FileMeasures]  # by episode id
    codec_sample: list[str]
    pair_sample: dict[str, list[str]]  # acoustic cell -> sampled episode ids
    files: dict[str, str]  # episode id -> run-relative audio path (recordings present)
    f0: bool
    stats: dict[str, int]


def _trackers() -> str | None:
    """None when the pitch trackers import, else why not."""
    try:
        import librosa  # noqa: F401
        import parselmouth  # noqa: F401

        import analysis.acoustics  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


def _cell_key(agent: Any, condition: Any) -> str:
    return f"{agent} / {condition}"


def audio_pass(inp: GateInputs) -> AudioPass:
    """The run's one audio pass (`measure_audio`), unless the pipeline measured it already."""
    if inp.audio_measured is None:
        inp.audio_measured = measure_audio(
            inp.ing.run_dir, inp.episodes, inp.plan, inp.seed, workers=inp.audio_workers
        )
    return inp.audio_measured


def measure_audio(
    run: Path, episodes: pd.DataFrame, plan: AnalysisPlan, seed: int, *, workers: int | None = None
) -> AudioPass:
    """Measure every recording once (cached in the run folder, a process pool over the cores): the
    codec sample, the PYIN sample of each condition cell, the Praat median of every recording, and
    the activity and onsets of both channels (voice-to-voice latency, the sync check).

    `episodes`: one row per episode with episode_id, audio_file, analysable, agent, condition_key."""
    ep = episodes
    base = str(run)
    files = {
        str(e): str(a)
        for e, a in zip(ep["episode_id"], ep["audio_file"], strict=True)
        if isinstance(a, str) and _exists(base, run, a)
    }
    codec_th, ac_th = plan.gates.codec, plan.gates.acoustic
    codec_sample = _sample(sorted(files), codec_th.max_files, seed)
    f0 = _trackers() is None
    analysable = ep[(ep["analysable"] == True) & ep["episode_id"].astype(str).isin(files)]  # noqa: E712
    pair_sample: dict[str, list[str]] = {}
    if f0:
        for (agent, cond), sub in analysable.groupby(["agent", "condition_key"]):
            pair_sample[_cell_key(agent, cond)] = _sample(
                list(sub["episode_id"]), ac_th.max_files_per_cell, seed
            )
    paired = {e for ids in pair_sample.values() for e in ids}
    wanted = audio_measures.requests_for(codec_sample, sorted(paired), sorted(files))
    params = audio_measures.AudioParams(
        rate=codec_th.sample_rate,
        channels=codec_th.channels,
        subtype=codec_th.subtype,
        target_lufs=codec_th.target_lufs,
        lufs_tolerance=codec_th.lufs_tolerance,
        max_seconds=ac_th.max_seconds_per_file if f0 else 0.0,
        f0=f0,
        onset_threshold_db=plan.gates.completeness.onset_threshold_db,
    )
    by_path, stats = audio_measures.measure_files(
        run, {files[e]: flags for e, flags in wanted.items()}, params, workers=workers
    )
    return AudioPass(
        measures={e: by_path[files[e]] for e in wanted},
        codec_sample=codec_sample,
        pair_sample=pair_sample,
        files=files,
        f0=f0,
        stats=stats,
    )


def acoustic_validity(inp: GateInputs) -> tuple[GateResult, pd.Series, pd.Series]:
    """Also returns the validated agent F0 median per episode (NaN where the cell did not pass)."""
    th = inp.plan.gates.acoustic
    p = inp.pairs.set_index("pair_id")
    ep = inp.episodes
    f0 = pd.Series(np.nan, index=ep["episode_id"])
    scope = _scope(inp.plan, "acoustic_validity")

    def none(why: str) -> tuple[GateResult, pd.Series, pd.Series]:
        res = GateResult(
            gate="acoustic_validity",
            verdict="not-evaluable",
            evidence=why,
            thresholds=th.model_dump(),
            scope=scope,
            details={},
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object), f0

    if not inp.audio:
        return none(
            "audio checks disabled for this analysis; F0 metrics withheld (timing and outcome metrics only)"
        )
    missing = _trackers()
    if missing is not None:
        return none(f"pitch trackers unavailable ({missing}); F0 metrics withheld")
    measured = audio_pass(inp)
    if not measured.pair_sample:
        return none("no recordings to measure; F0 metrics withheld")
    cells: dict[str, dict[str, Any]] = {}
    from analysis.acoustics import PitchAgreement, cell_agreement

    for key, sample in measured.pair_sample.items():
        per_file = [
            PitchAgreement(
                tracker_a="praat",
                tracker_b="pyin",
                r=math.nan if m.pair_r is None else m.pair_r,
                voiced_both=int(m.pair_voiced_both or 0),
                frames=0,
            )
            for m in (measured.measures[e] for e in sample)
            if m.agent_usable
        ]
        agree = cell_agreement(per_file, th.min_r)
        cells[key] = {
            "files": agree.files,
            "min_r": audio_measures.nan_to_none(agree.min_r),
            "min_voiced_both": agree.min_voiced_both,
            "verdict": "pass" if agree.passes else ("not-evaluable" if agree.files == 0 else "fail"),
        }
    ep_key = [_cell_key(a, c) for a, c in zip(ep["agent"], ep["condition_key"], strict=True)]
    ep_v = pd.Series(
        [cells.get(k, {}).get("verdict", "not-evaluable") for k in ep_key], index=ep["episode_id"]
    )
    for eid in ep_v.index[ep_v == "pass"]:
        m = measured.measures.get(str(eid))
        if m is not None and m.agent_usable and m.praat_median_hz is not None:
            f0[eid] = m.praat_median_hz
    verdict = worst([c["verdict"] for c in cells.values()])
    res = GateResult(
        gate="acoustic_validity",
        verdict=verdict,
        evidence=f"Praat vs PYIN on the agent channel, per-file minimum r per condition cell vs {th.min_r}: "
        + "; ".join(
            f"{k}: {c['verdict']} (min r {c['min_r']}, {c['files']} files)" for k, c in cells.items()
        ),
        thresholds=th.model_dump(),
        scope=scope,
        details={"cells": cells, "audio_pass": measured.stats},
    )
    return res, _pairwise(inp, ep_v), f0


# -- 5. codec normalisation ---------------------------------------------------------------------
def codec_normalisation(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    th = inp.plan.gates.codec
    p = inp.pairs.set_index("pair_id")
    ep = inp.episodes
    scope = _scope(inp.plan, "codec_normalisation")
    measured = audio_pass(inp) if inp.audio else None
    if measured is None or not measured.files:
        why = "audio checks disabled" if not inp.audio else "no recordings present"
        res = GateResult(
            gate="codec_normalisation",
            verdict="not-evaluable",
            evidence=why,
            thresholds=th.model_dump(),
            scope=scope,
            details={},
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object)
    files = measured.files
    checked = measured.codec_sample
    results = {e: measured.measures[e].codec(files[e]) for e in checked}
    bad = {e: r.detail for e, r in results.items() if not r.ok}
    verdict: Verdict = "fail" if bad else "pass"
    paths = sorted({r.resampling_path for r in results.values() if r.resampling_path})
    ep_v = pd.Series("not-evaluable", index=ep["episode_id"], dtype=object)
    ep_v[list(files)] = verdict  # a sampled check stands for the run's recording chain
    for e in bad:
        ep_v[e] = "fail"
    res = GateResult(
        gate="codec_normalisation",
        verdict=verdict,
        evidence=f"{len(checked)} of {len(files)} recordings checked: {th.channels} ch {th.subtype}, each channel normalised "
        f"to {th.target_lufs} LUFS +- {th.lufs_tolerance} at {th.sample_rate} Hz; resampling path(s): {paths}"
        + (f"; failures: {len(bad)}" if bad else ""),
        thresholds=th.model_dump(),
        scope=scope,
        details={"failures": dict(list(bad.items())[:50]), "resampling_paths": paths},
    )
    return res, _pairwise(inp, ep_v)


# -- 6. artifact completeness -------------------------------------------------------------------
def _exists(base: str, run_dir: Path, rel: str) -> bool:
    """`(run_dir / rel).exists()` without building a Path for a plain relative name (tens of
    microseconds each, seconds over a large run); the same errors pass or raise."""
    if not rel or rel.startswith("/") or rel.endswith("/") or "//" in rel:
        return (run_dir / rel).exists()
    try:
        os.stat(f"{base}/{rel}")
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise
    except ValueError:
        return False
    return True


def artifact_completeness(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    th = inp.plan.gates.completeness
    ep = inp.episodes
    df = inp.ing.table.df
    table = inp.ing.table
    base = str(inp.ing.run_dir)

    def has(t: str) -> pd.Series:
        seen = np.zeros(table.n_episodes, dtype=bool)
        seen[table.of_type(t, columns=["ep"])["ep"].to_numpy()] = True
        return pd.Series(seen, index=table.episodes)

    calls = table.of_type("tool_call", columns=["ep", "call_id"])
    results = table.of_type("tool_result", columns=["ep", "call_id"])
    unanswered = calls.merge(results.drop_duplicates(), on=["ep", "call_id"], how="left", indicator=True)
    unanswered = (
        table.per_episode(unanswered[unanswered["_merge"] == "left_only"].groupby("ep").size().astype(float))
        > 0
    )
    problems: dict[str, list[str]] = {str(e): [] for e in ep["episode_id"]}
    for e, ok, why in zip(ep["episode_id"], ep["analysable"], ep["drop_reason"], strict=True):
        if ok is not True:
            problems[str(e)].append(str(why))
    checks = {
        "timing (call_started)": has("call_started"),
        "transcript (agent_transcript)": has("agent_transcript") | ~has("agent_speech_start"),
        "caller timing (utterance start/end)": has("caller_utterance_start") & has("caller_utterance_end"),
    }
    for name, s in checks.items():
        for e in s.index[~s]:
            problems[str(e)].append(f"missing {name}")
    for e in unanswered.index[unanswered]:
        problems[str(e)].append("tool log incomplete: a tool_call without its tool_result")
    for e, h, m in zip(ep["episode_id"], ep["events_hash_ok"], ep["events_monotonic"], strict=True):
        if h == 0.0:
            problems[str(e)].append("events.jsonl hash differs from its record")
        if m == 0.0:
            problems[str(e)].append("event clock not monotonic")
    audio_ok = {
        str(e): isinstance(a, str) and _exists(base, inp.ing.run_dir, a)
        for e, a in zip(ep["episode_id"], ep["audio_file"], strict=True)
    }
    for e, ok in audio_ok.items():
        if not ok:
            problems[e].append("audio (call.wav) missing")
    sync: dict[str, Any] = {"checked": 0}
    if inp.audio:
        candidates = [e for e, ok in audio_ok.items() if ok and e in table.episodes]
        sample = _sample(candidates, th.max_audio_files, inp.seed)
        pos = {e: i for i, e in enumerate(table.episodes)}
        offsets_all: list[float] = []
        unsynced = 0
        measured = audio_pass(inp)
        for e in sample:
            sub = df[df["ep"] == pos[e]]
            a_starts = sub.loc[sub["type"] == "agent_speech_start", "t_ms"].astype(int).tolist()
            c_starts = sub.loc[sub["type"] == "caller_utterance_start", "t_ms"].astype(int).tolist()
            m = measured.measures.get(e)
            if m is None or not m.readable:
                problems[e].append(f"audio unreadable: {m.read_error if m is not None else 'not measured'}")
                continue
            offs = audio_measures.nearest_onsets(m.onsets_ms("agent"), a_starts, th.onset_search_ms)
            offs += audio_measures.nearest_onsets(m.onsets_ms("caller"), c_starts, th.onset_search_ms)
            found = [o for o in offs if o is not None]
            offsets_all += found
            early = [o for o in found if o < -th.sync_tolerance_ms]
            med = float(np.median(np.abs(found))) if found else None
            if len(found) < len(offs):
                problems[e].append(
                    f"{len(offs) - len(found)} speech start(s) with no audio onset within {th.onset_search_ms} ms"
                )
            if early or med is None or med > th.sync_tolerance_ms:
                unsynced += 1
                problems[e].append(
                    f"events and audio out of sync (median |offset| {med} ms, {len(early)} onset(s) before the logged start)"
                )
        sync = {
            "checked": len(sample),
            "of": len(candidates),
            "unsynchronised": unsynced,
            "offset_ms_median": float(np.median(offsets_all)) if offsets_all else None,
            "offset_ms_p95_abs": float(np.percentile(np.abs(offsets_all), 95)) if offsets_all else None,
            "rule": f"median |onset - logged start| <= {th.sync_tolerance_ms} ms and no onset earlier than -{th.sync_tolerance_ms} ms "
            "(a later onset can be leading silence inside the clip)",
        }
    ep_v = pd.Series({e: ("fail" if v else "pass") for e, v in problems.items()}, dtype=object)
    n_fail = int((ep_v == "fail").sum())
    verdict: Verdict = "fail" if n_fail else ("pass" if len(ep_v) else "not-evaluable")
    if verdict == "pass" and not inp.audio:
        verdict = "not-evaluable"
    failing = {e: v for e, v in problems.items() if v}
    res = GateResult(
        gate="artifact_completeness",
        verdict=verdict,
        evidence=f"{len(ep_v) - n_fail} of {len(ep_v)} episodes complete (events schema-valid with matching hash, audio, "
        f"transcript, timing, tool log); sync checked on {sync.get('checked', 0)} recordings"
        + ("" if inp.audio else "; audio checks disabled, so sync is unverified"),
        thresholds=th.model_dump(),
        scope=_scope(inp.plan, "artifact_completeness"),
        details={
            "failing_episodes": dict(list(failing.items())[:50]),
            "n_failing": len(failing),
            "sync": sync,
        },
    )
    if not inp.audio:
        ep_v[ep_v == "pass"] = "not-evaluable"
    return res, _pairwise(inp, ep_v)


# -- 7. annotation reliability ------------------------------------------------------------------
def annotation_reliability(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    from analysis.agreement import cohen_kappa, krippendorff_alpha, reliability_matrix

    th = inp.plan.gates.annotation
    p = inp.pairs.set_index("pair_id")
    q = inp.labels.quality
    scope = _scope(inp.plan, "annotation_reliability")
    if q.empty:
        res = GateResult(
            gate="annotation_reliability",
            verdict="not-evaluable",
            evidence="no quality annotations (ratings/labels.jsonl)",
            thresholds=th.model_dump(),
            scope=scope,
            details={},
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object)
    labels: dict[str, Any] = {}
    for label in [x for x in QUALITY_LABELS if x in set(q["label"])]:
        sub = q[q["label"] == label]
        raters = sorted(sub["rater"].unique())
        if len(raters) < 2:
            labels[label] = {"verdict": "not-evaluable", "why": "fewer than two raters"}
            continue
        if len(raters) == 2:
            wide = sub.pivot_table(index="episode_id", columns="rater", values="value", aggfunc="mean")
            r = cohen_kappa(wide[raters[0]], wide[raters[1]])
            threshold = th.kappa
        else:
            r = krippendorff_alpha(reliability_matrix(sub, "episode_id", "rater", "value"), "ordinal")
            threshold = th.alpha
        v: Verdict = "not-evaluable" if r.value is None else ("pass" if r.value >= threshold else "fail")
        labels[label] = {
            "verdict": v,
            "statistic": r.statistic,
            "value": r.value,
            "threshold": threshold,
            "raters": len(raters),
            "units": r.n_units,
        }
    verdict = worst([x["verdict"] for x in labels.values()])
    res = GateResult(
        gate="annotation_reliability",
        verdict=verdict,
        evidence="; ".join(
            f"{k}: {x['verdict']} ({x.get('statistic', '')} {x.get('value')})" for k, x in labels.items()
        ),
        thresholds=th.model_dump(),
        scope=scope,
        details={"labels": labels},
    )
    return res, pd.Series(verdict, index=p.index, dtype=object)


# -- 8. differential failure ---------------------------------------------------------------------
def differential_failure(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    th = inp.plan.gates.failure
    cells, by_pair = missingness.differential_failure(
        inp.pairs, alpha=th.alpha, max_rate_difference=th.max_rate_difference
    )
    res = GateResult(
        gate="differential_failure",
        verdict=worst([c.verdict for c in cells]) if cells else "not-evaluable",
        evidence=missingness.evidence(cells, th.max_rate_difference, th.alpha),
        thresholds=th.model_dump(),
        scope=_scope(inp.plan, "differential_failure"),
        details={"cells": [c.as_json() for c in cells]},
    )
    return res, by_pair


# -- observer validity ---------------------------------------------------------------------------
def observer_validity(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    """The caller's readings against blind raters (`analysis.observer_gate`); reader agreement and
    the caller's ASR word error rate as diagnostics."""
    th = inp.plan.gates.observer
    data = observer_gate.observer_inputs(inp.ing.table, inp.episodes.set_index("episode_id")["agent"])
    ratings, _ = observer_gate.read_observer_labels(inp.ing.run_dir)
    diagnostics = {
        "reader_agreement": observer_gate.reader_agreement(data.readings, data.other),
        "caller_asr": observer_gate.asr_word_error(data.agent_words, data.asr_heard),
    }
    v = observer_gate.evaluate_observer(
        data.readings, ratings, inp.pairs, kappa_min=th.kappa, min_turns=th.min_turns,
        min_raters=th.min_raters, alpha=inp.plan.alpha, diagnostics=diagnostics,
    )  # fmt: skip
    res = GateResult(
        gate="observer_validity",
        verdict=v.verdict,
        evidence=v.evidence,
        thresholds=v.thresholds,
        scope=_scope(inp.plan, "observer_validity"),
        details=v.details,
        diagnostics=v.diagnostics,
    )
    return res, v.by_pair.reindex(inp.pairs["pair_id"]).fillna("not-evaluable").astype(object)


def evaluate(inp: GateInputs) -> tuple[GateReport, pd.Series]:
    """All gates; also the validated agent F0 per episode (from the acoustic gate)."""
    pieces: list[tuple[GateResult, pd.Series]] = [
        scenario_lock(inp),
        fact_invariance(inp),
        persona_perceptibility(inp),
    ]
    ac_res, ac_pairs, f0 = acoustic_validity(inp)
    pieces += [
        (ac_res, ac_pairs),
        codec_normalisation(inp),
        artifact_completeness(inp),
        annotation_reliability(inp),
        differential_failure(inp),
        observer_validity(inp),
    ]
    by_pair = (
        pd.DataFrame({res.gate: s for res, s in pieces}).reindex(inp.pairs["pair_id"]).fillna("not-evaluable")
    )
    by_pair.index.name = "pair_id"
    return GateReport(results=[r for r, _ in pieces], by_pair=by_pair), f0


def gates_json(report: GateReport, plan_sha256: str) -> dict[str, Any]:
    counts = {g: report.by_pair[g].value_counts().to_dict() for g in report.by_pair.columns}
    return {
        "plan_sha256": plan_sha256,
        "gates": [r.model_dump(mode="json") for r in report.results],
        "pairs_by_verdict": counts,
    }


def library_for(ing: Ingested, scenario_dir: str | Path | None) -> ScenarioLibrary | None:
    from scenarios import BUNDLED_LIBRARY

    if scenario_dir is None:
        sd = ing.manifest.campaign.scenario_dir
        scenario_dir = Path(ing.manifest.campaign_file).parent / sd if sd else BUNDLED_LIBRARY
    try:
        return ScenarioLibrary(scenario_dir)
    except VoiceAuditError as exc:
        log.warning("scenario library unavailable: %s", exc)
        return None
