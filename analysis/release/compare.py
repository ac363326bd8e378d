"""Two versions side by side: the same campaign run against an old and a new agent (or version).

Calls are matched across the runs by what the planner fixes before any call: scenario, the pair's
contrast and its two conditions, the voice index and the replicate (and the side within the pair).
On the matched pairs, per cell and family:

* the change of each paired delta, a difference in differences: per matched pair
  D = (a - b | new) - (a - b | old), its mean with a paired interval (the method is stated; by default
  the sign-flip randomization interval the analysis plan uses for continuous deltas, exact under
  the null that old and new are exchangeable within a matched pair). A positive D means a - b grew.
* the change of each condition's level: per matched call new - old, with the same interval.

Where every matched pair shows the same change (a deterministic agent on a quiet line), the paired
spread is zero and the interval falls back on the spread of the levels, as in the run's own deltas
(`voice_audit.analysis.stats.degenerate_interval`); for a gap whose two sides, the runs' a - b gaps,
bound nothing (a constant gap below 0 is neither a spread nor a count), those are the four levels a
and b of both runs (`level_contrast_interval`): without them a deterministic widening of a burden
gap never had an interval, however many pairs.

Speakers are the unit of evidence (docs/method/index.md section 8), here as in the run's own deltas:
every interval is clustered by speaker with the analysis's own clustering
(`voice_audit.analysis.stats.voice_clusters` inside `paired_mean_delta(cluster_by_voice=True)`: the
CR2 interval over the speaker clusters when there are fewer clusters than pairs). A matched pair is
voiced by up to four voices, a and b in each run; matched pairs sharing any of them, on either side
and in either run, are one cluster. A voice is the speaker the episode records, or in records that
name none (before episode schema 4) the realisation, condition and voice index, as analyze takes it
(`voice_audit.analysis.metrics.voice_id`). A cell with fewer voice clusters than the analysis plan's
`min_voices_paired_disparity` (3 in the bundled plan) keeps its estimates without an interval ("no
interval: N speakers", analyze's rule), says so with its speakers per side, and so decides no
release check either way.

Only pairs included in both runs' deltas enter. The seed method's cross-model gap per subgroup
(`voice_audit.analysis.subgroups_run.gaps_against`, matched on caller_id) goes into the same document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from voice_audit.analysis.deltas import CELL_KEYS, cell_label, speakers_text
from voice_audit.analysis.metrics import voice_id
from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.plan import DEFAULT_PLAN, load_plan
from voice_audit.analysis.release.documents import COMPARISON_JSON, read_json, short_label
from voice_audit.analysis.stats import PairedValues, adjust_p_values, paired_mean_delta, voice_clusters
from voice_audit.harness.runlog import (
    DELTAS_JSON,
    DISPOSITION_JSON,
    METRICS_PARQUET,
    PAIRS_PARQUET,
    RUN_JSON,
    atomic_write_json,
    run_json,
)
from voice_audit.scenarios import ConfigError

SCHEMA = "voice-audit/comparison"
SCHEMA_VERSION = 2  # 2: intervals clustered by speaker, speakers per side in every cell
MATCH_KEYS: tuple[str, ...] = (
    "scenario_id",
    "contrast",
    "condition_key_a",
    "condition_key_b",
    "voice_index",
    "replicate",
)
Interval = Literal["signflip", "t", "bca", "percentile"]
QUANTITY = {
    "gap": "(a - b | new) - (a - b | old)",
    "level_a": "condition a: new - old",
    "level_b": "condition b: new - old",
}


class RunTables:
    """What compare reads from one analysed run."""

    def __init__(self, run_dir: Path) -> None:
        fix = f"run: voice-audit analyze {run_dir}"
        if not run_json(run_dir).exists():
            raise ConfigError(
                f"not a run folder (no {RUN_JSON})",
                path=run_dir,
                fix="pass a folder written by voice-audit run",
            )
        for name in (METRICS_PARQUET, PAIRS_PARQUET):
            if not (run_dir / name).exists():
                raise ConfigError(f"{name} not found (the run is not analysed)", path=run_dir / name, fix=fix)
        self.dir = run_dir
        self.manifest = read_json(run_json(run_dir), RUN_JSON, "pass a run folder")
        self.run_id = str(self.manifest.get("run_id", run_dir.name))
        self.deltas = read_json(run_dir / DELTAS_JSON, DELTAS_JSON, fix)
        self.disposition = read_json(run_dir / DISPOSITION_JSON, DISPOSITION_JSON, fix)
        metrics = pd.read_parquet(run_dir / METRICS_PARQUET)
        pairs = pd.read_parquet(run_dir / PAIRS_PARQUET)
        pairs["contrast"] = pairs["contrast"].fillna("")
        metrics = metrics.sort_values("attempt").drop_duplicates(["pair_id", "side"], keep="last")
        voice = metrics.loc[metrics["side"] == "a", ["pair_id", "voice_index"]].drop_duplicates("pair_id")
        self.pairs = pairs[pairs["included"].astype(bool)].merge(voice, on="pair_id", how="left")
        self.metrics = metrics
        self.voices = pair_voices(metrics)
        self.families: dict[str, list[str]] = {}
        for cell in self.deltas.get("cells", []):
            for e in cell.get("estimates", []):
                fam = self.families.setdefault(str(e["family"]), [])
                if e["metric"] not in fam:
                    fam.append(str(e["metric"]))
        self.margins: dict[str, float] = {
            str(e["metric"]): float(e["smallest_effect"])
            for c in self.deltas.get("cells", [])
            for e in c.get("estimates", [])
            if e.get("smallest_effect") is not None
        }
        alphas = {float(e["alpha"]) for c in self.deltas.get("cells", []) for e in c.get("estimates", [])}
        self.alpha = min(alphas) if alphas else 0.05

    def agents(self) -> list[str]:
        return list(dict.fromkeys(self.pairs["agent"].astype(str)))

    def side_values(self, pair_ids: pd.Index, side: str, metric: str) -> np.ndarray:
        m = self.metrics[self.metrics["side"] == side].set_index("pair_id")
        if metric not in m.columns:
            return np.full(len(pair_ids), np.nan)
        return m[metric].reindex(pair_ids).to_numpy(dtype=np.float64, na_value=np.nan)

    def disposition_cell(self, cell: dict[str, str]) -> dict[str, Any] | None:
        for c in self.disposition.get("cells", []):
            if all(c["cell"].get(k) == cell.get(k) for k in CELL_KEYS):
                return {"claim": c["claim"], "families": c["families"]}
        return None


def pair_voices(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per pair_id: who voiced side a and side b (`voice_a`, `voice_b`: the recorded speaker, else the
    realisation, `voice_audit.analysis.metrics.voice_id`, as analyze clusters them) and whether the
    record named the speaker (`named_a`, `named_b`). A metrics table written before voice_id existed
    gets the realisation from its condition key and voice index."""
    m = metrics.drop_duplicates(["pair_id", "side"], keep="last")
    speaker = m["speaker"] if "speaker" in m.columns else pd.Series(None, index=m.index, dtype=object)
    named = speaker.notna() & (speaker.astype(str) != "")
    fallback = pd.Series(
        [
            voice_id(str(k), int(i), str(sp) if ok else None)
            for k, i, sp, ok in zip(m["condition_key"], m["voice_index"], speaker, named, strict=True)
        ],
        index=m.index,
        dtype=object,
    )
    voice = m["voice_id"].where(m["voice_id"].notna(), fallback) if "voice_id" in m.columns else fallback
    frame = pd.DataFrame(
        {"pair_id": m["pair_id"], "side": m["side"], "voice": voice.astype(str), "named": named}
    )
    wide = frame.pivot(index="pair_id", columns="side", values=["voice", "named"])
    out = pd.DataFrame(index=wide.index)
    for side in ("a", "b"):
        out[f"voice_{side}"] = wide[("voice", side)] if ("voice", side) in wide.columns else None
        out[f"named_{side}"] = (
            wide[("named", side)].fillna(False).astype(bool) if ("named", side) in wide.columns else False
        )
    return out


def min_speakers(*runs: RunTables) -> tuple[int, list[str]]:
    """The analysis plan's minimum of distinct voices (speaker clusters) a cell needs before its delta
    can be a claim (`claims.min_voices_paired_disparity` of the bundled plan, the one analyze applies
    unless told otherwise), and a note for each run analysed with another plan."""
    plan = load_plan(DEFAULT_PLAN)
    need = plan.claims.min_voices_paired_disparity
    notes = [
        f"run {run.run_id} was analysed with another plan (sha256 {str(sha)[:12]}); the speaker clusters a cell "
        f"needs are the bundled plan's {need}"
        for run in runs
        if (sha := run.deltas.get("plan_sha256")) not in (None, plan.sha256)
    ]
    return need, notes


def speaker_clusters(old: RunTables, new: RunTables, matched: pd.DataFrame) -> np.ndarray:
    """Cluster label of each matched pair (row of `matched`): the connected components, by
    `voice_clusters`, of the voices each matched pair links (a and b of the new pair, a and b of the
    old one): pairs sharing a speaker, on either side and in either run, are one cluster. In a
    campaign whose voice index names the same speaker in both runs this is analyze's clustering of
    either run's pairs."""
    vn = new.voices.reindex(pd.Index(matched["pair_id_new"]))
    vo = old.voices.reindex(pd.Index(matched["pair_id_old"]))
    n = len(matched)
    an, bn = vn["voice_a"].astype(str).tolist(), vn["voice_b"].astype(str).tolist()
    ao, bo = vo["voice_a"].astype(str).tolist(), vo["voice_b"].astype(str).tolist()
    # links: new a - new b (these n come first, so the first n labels are the pairs'), old a - old b,
    # and each side's voice in the new run with the same side's in the old run
    labels = voice_clusters([*an, *ao, *an, *bn], [*bn, *bo, *ao, *bo])
    return labels[:n]


def cell_speakers(
    old: RunTables, new: RunTables, matched: pd.DataFrame, clusters: np.ndarray, need: int
) -> dict[str, Any]:
    """Distinct speakers per side and run among a cell's matched pairs, the speaker clusters the
    intervals rest on, and what they support (the analysis's rule: `need` clusters before a delta can
    be a claim)."""
    vn = new.voices.reindex(pd.Index(matched["pair_id_new"]))
    vo = old.voices.reindex(pd.Index(matched["pair_id_old"]))
    per_side = {
        side: {run: int(v[f"voice_{side}"].nunique()) for run, v in (("old", vo), ("new", vn))}
        for side in ("a", "b")
    }
    named = {run: _named(v) for run, v in (("old", vo), ("new", vn))}
    g = len(set(clusters.tolist()))
    notes: list[str] = []
    if len(matched) and g < need:
        # analyze's rule and words (voice_audit.analysis.disposition, voice_audit.analysis.deltas)
        notes.append(
            f"speakers per side: a {per_side['a']['new']} (old run {per_side['a']['old']}), b {per_side['b']['new']} "
            f"(old run {per_side['b']['old']}), in {g} speaker cluster(s): {g} distinct voice(s) < {need} needed "
            "for a paired-disparity claim: replicates of one voice are not independent evidence about its "
            f"condition; the changes are shown without an interval ({speakers_text(g)}) and count as evidence "
            "neither for nor against the contrast"
        )
    notes += [unnamed_note(run, how) for run, how in named.items() if len(matched) and how != "all"]
    return {
        "a": per_side["a"],
        "b": per_side["b"],
        "clusters": g,
        "min_speakers": need,
        "enough": g >= need,
        "named": named,
        "notes": notes,
    }


def _named(voices: pd.DataFrame) -> Literal["all", "some", "none"]:
    """Whether the records of these pairs name their speakers: on every call, some, or none."""
    flags = pd.concat([voices["named_a"], voices["named_b"]]).fillna(False).astype(bool)
    return "all" if flags.all() else "some" if flags.any() else "none"


def unnamed_note(run: str, how: str) -> str:
    """The limitation of records that do not say who voiced the caller."""
    which = "some of its calls" if how == "some" else "its calls"
    return (
        f"the {run} run's records do not name the speaker of {which} (episode schema before 4): those voices are "
        "counted by realisation (condition and voice index), as analyze does, so one person rendered as two "
        "realisations counts as two speakers and the speaker counts may overstate the evidence"
    )


def _agent_pairs(old: RunTables, new: RunTables) -> list[tuple[str, str]]:
    a_old, a_new = old.agents(), new.agents()
    if len(a_old) == 1 and len(a_new) == 1:
        return [(a_old[0], a_new[0])]
    common = [(a, a) for a in a_old if a in a_new]
    if not common:
        raise ConfigError(
            f"runs {old.run_id} and {new.run_id} have no agent in common ({a_old} vs {a_new})",
            path=new.dir,
            fix="compare single-agent runs, or runs whose agents share names",
        )
    return common


def change_estimate(
    values_new: np.ndarray,
    values_old: np.ndarray,
    index: pd.Index,
    metric: str,
    family: str,
    alpha: float,
    interval: Interval,
    levels: Sequence[tuple[int, np.ndarray]] | None = None,
    clusters: np.ndarray | None = None,
    need: int = 1,
) -> dict[str, Any]:
    """Mean of new - old over matched rows with both values, with the paired interval of `interval`.
    `levels` (sign, per-row values) say what new - old is made of when both are gaps (for the
    fallback without spread, `paired_mean_delta`). `clusters` (a speaker-cluster label per row,
    `speaker_clusters`) makes the interval the analysis's voice-clustered one; with fewer than `need`
    clusters among the rows kept, the estimate stands without an interval ("no interval: N speakers")."""
    keep = ~(np.isnan(values_new) | np.isnan(values_old))
    table = pd.DataFrame({"a": values_new[keep], "b": values_old[keep]}, index=index[keep])
    if clusters is not None:
        # the cluster label is both voices of the row: paired_mean_delta's own voice clustering then
        # finds exactly these clusters
        label = [f"speakers#{c}" for c in np.asarray(clusters)[keep]]
        table = table.assign(voice_a=label, voice_b=label)
    drops = {"a value missing in one of the runs": int((~keep).sum())} if (~keep).any() else {}
    est = paired_mean_delta(
        PairedValues(metric=metric, table=table, drops=drops),
        family=family,
        alpha=alpha,
        interval=interval,
        cluster_by_voice=clusters is not None,
        levels=None if levels is None else [(sign, values[keep]) for sign, values in levels],
    )
    method = est.method.replace("paired mean delta", "mean over matched pairs of new - old").replace(
        "voice cluster(s)", "speaker cluster(s)"
    )
    lo, hi, p = est.ci_low, est.ci_high, est.p_value
    notes = list(est.notes)
    no_interval = None
    g = est.n_clusters
    if g is not None and g < need and est.estimate is not None:
        no_interval = speakers_text(g)
        lo = hi = p = None
        notes.append(
            f"{no_interval} (the analysis plan needs {need} per cell): the estimate speaks for these speakers' "
            "calls; an interval over replicates of so few speakers would describe the replicates, not the condition"
        )
    return {
        "estimate": est.estimate,
        "ci_low": lo,
        "ci_high": hi,
        "p_value": p,
        "n_pairs": est.n_pairs,
        "n_dropped": est.n_dropped,
        "n_clusters": g,
        "no_interval": no_interval,
        "alpha": alpha,
        "method": method,
        "notes": notes,
        "new": est.mean_a,
        "old": est.mean_b,
    }


def compare_cell(
    old: RunTables,
    new: RunTables,
    matched: pd.DataFrame,
    alpha: float,
    interval: Interval,
    clusters: np.ndarray | None = None,
    need: int = 1,
) -> list[dict[str, Any]]:
    """Changes of every plan metric of both runs, by family; `matched` has pair_id_old / pair_id_new,
    `clusters` its speaker clusters (`speaker_clusters`), `need` the clusters an interval needs."""
    idx_old = pd.Index(matched["pair_id_old"])
    idx_new = pd.Index(matched["pair_id_new"])
    keys = pd.Index(matched["pair_id_new"].astype(str) + "~" + matched["pair_id_old"].astype(str))
    out: list[dict[str, Any]] = []
    for family, metrics in new.families.items():
        for metric in metrics:
            if metric not in old.families.get(family, []):
                continue
            spec = CATALOGUE.get(metric)
            va_o, vb_o = old.side_values(idx_old, "a", metric), old.side_values(idx_old, "b", metric)
            va_n, vb_n = new.side_values(idx_new, "a", metric), new.side_values(idx_new, "b", metric)
            rows = {
                "gap": (va_n - vb_n, va_o - vb_o),
                "level_a": (va_n, va_o),
                "level_b": (vb_n, vb_o),
            }
            gap_levels = [(1, va_n), (-1, vb_n), (-1, va_o), (1, vb_o)]
            for of, (vn, vo) in rows.items():
                block = change_estimate(
                    vn,
                    vo,
                    keys,
                    metric,
                    family,
                    alpha,
                    interval,
                    gap_levels if of == "gap" else None,
                    clusters=clusters,
                    need=need,
                )
                out.append(
                    {
                        "family": family,
                        "metric": metric,
                        "of": of,
                        "quantity": QUANTITY[of],
                        "higher_is_worse": spec.higher_is_worse if spec else None,
                        "smallest_effect": new.margins.get(metric),
                        **block,
                    }
                )
    corrections = {"gap": "holm"}
    for family in {c["family"] for c in out}:
        for of, method in corrections.items():
            members = [c for c in out if c["family"] == family and c["of"] == of and c["p_value"] is not None]
            adjusted = adjust_p_values([float(c["p_value"]) for c in members], method)  # type: ignore[arg-type]
            for c, p in zip(members, adjusted, strict=True):
                c["p_adjusted"] = p
                c["adjustment"] = f"{method} within the family's gap changes of this cell"
    return out


def match_pairs(old: RunTables, new: RunTables, agent_old: str, agent_new: str) -> pd.DataFrame:
    """Included pairs of both runs joined on MATCH_KEYS (outer; `_merge` says which run has the pair)."""
    po = old.pairs[old.pairs["agent"].astype(str) == agent_old]
    pn = new.pairs[new.pairs["agent"].astype(str) == agent_new]
    cols = [*MATCH_KEYS, "pair_id"]
    return pn[[*cols, "agent"]].merge(
        po[cols], on=list(MATCH_KEYS), suffixes=("_new", "_old"), how="outer", indicator=True
    )


def subgroup_gaps(old_dir: Path, new_dir: Path, top: int = 3) -> tuple[list[dict[str, Any]], list[str]]:
    """The cross-model gap per caller subgroup (new over old), top subgroups per metric, worse for new first."""
    from voice_audit.analysis.subgroups import GapInputError, SubgroupError
    from voice_audit.analysis.subgroups_run import MiningOptions, gaps_against, load_table

    opts = MiningOptions(plot_top=0)
    try:
        reports = gaps_against(load_table(new_dir, opts), load_table(old_dir, opts), opts)
    except (GapInputError, SubgroupError) as exc:
        return [], [f"cross-model subgroup gap skipped: {exc}"]
    out: list[dict[str, Any]] = []
    for rep in reports:
        res = rep.result
        metrics = []
        for m in rep.metrics:
            ranking = rep.rankings[m]
            paired = res.effect(m, "paired")
            entries = []
            for rank, row in enumerate(ranking.table.head(top).itertuples(index=False), start=1):
                entries.append(
                    {
                        "rank": rank,
                        "itemset": str(row.itemset),
                        "support": _num(row.support),
                        "gap": _num(row.estimate),
                        "se": _num(row.se),
                        "p_value": _num(row.p_value),
                        "q_value": _num(row.q_value),
                        "significant": bool(row.significant),
                    }
                )
            metrics.append(
                {
                    "metric": m,
                    "direction": rep.info[m].direction,
                    "overall_gap": _num(paired.estimate[0]),
                    "overall_p_value": _num(paired.p_value()[0]),
                    "n_tested": ranking.n_tested,
                    "n_significant": ranking.n_significant,
                    "top": entries,
                }
            )
        out.append(
            {
                "m1": {"run_id": rep.m1.run_id, "agent": rep.m1.agent},
                "m2": {"run_id": rep.m2.run_id, "agent": rep.m2.agent},
                "definition": "gap = m(I, new) - m(I, old), paired test on per-caller differences matched on caller_id",
                "n_matched": res.n_matched,
                "min_support": rep.min_support,
                "metrics": metrics,
            }
        )
    return out, []


def _num(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def compare_runs(
    old_dir: str | Path,
    new_dir: str | Path,
    *,
    interval: Interval = "signflip",
    alpha: float | None = None,
    subgroups: bool = True,
    speakers: int | None = None,
) -> dict[str, Any]:
    """The comparison document (see the module docstring); nothing is written. `speakers`: the speaker
    clusters a cell needs for its intervals (default: the bundled analysis plan's minimum)."""
    old, new = RunTables(Path(old_dir)), RunTables(Path(new_dir))
    a = alpha if alpha is not None else new.alpha
    need, notes = min_speakers(old, new)
    if speakers is not None:
        need, notes = speakers, []
    if old.manifest.get("campaign", {}).get("name") != new.manifest.get("campaign", {}).get("name"):
        notes.append(
            "the two runs come from campaigns with different names; calls are matched on the plan's keys all the same"
        )
    for sid, sha in new.manifest.get("scenario_hashes", {}).items():
        if sid in old.manifest.get("scenario_hashes", {}) and old.manifest["scenario_hashes"][sid] != sha:
            raise ConfigError(
                f"scenario {sid} differs between the runs (sha256 {old.manifest['scenario_hashes'][sid][:12]} vs {sha[:12]})",
                path=run_json(new.dir),
                fix="compare runs of the same locked scenarios",
            )
    cells: list[dict[str, Any]] = []
    for agent_old, agent_new in _agent_pairs(old, new):
        joined = match_pairs(old, new, agent_old, agent_new)
        matched = joined[joined["_merge"] == "both"]
        if matched.empty:
            notes.append(f"agents {agent_old} -> {agent_new}: no pair matched on {', '.join(MATCH_KEYS)}")
            continue
        for key, sub in joined.groupby(list(MATCH_KEYS[:4]), sort=True, dropna=False):
            both = sub[sub["_merge"] == "both"]
            clusters = speaker_clusters(old, new, both)
            spk = cell_speakers(old, new, both, clusters, need)
            cell = {"agent": agent_new, **dict(zip(MATCH_KEYS[:4], map(str, key), strict=True))}
            old_cell = {**cell, "agent": agent_old}
            block: dict[str, Any] = {
                "cell": {**cell, "agent_old": agent_old},
                "label": short_label(cell) + (f" (old agent {agent_old})" if agent_old != agent_new else ""),
                "full_label": cell_label(tuple(cell[k] for k in CELL_KEYS)),
                "n_matched": len(both),
                "n_only_old": int((sub["_merge"] == "right_only").sum()),
                "n_only_new": int((sub["_merge"] == "left_only").sum()),
                "disposition_old": old.disposition_cell(old_cell),
                "disposition_new": new.disposition_cell(cell),
                "speakers": spk,
                "changes": compare_cell(old, new, both, a, interval, clusters, need) if len(both) else [],
            }
            cells.append(block)
    for run in ("old", "new"):
        how = {c["speakers"]["named"][run] for c in cells if c["n_matched"]}
        if how - {"all"}:
            notes.append(unnamed_note(run, "none" if how == {"none"} else "some"))
    short = [c for c in cells if c["n_matched"] and not c["speakers"]["enough"]]
    if short:
        notes.append(
            f"{len(short)} of {len(cells)} compared cell(s) rest on fewer than {need} speaker clusters: their "
            "changes are shown without an interval and count as evidence neither for nor against the contrast"
        )
    gaps, gap_notes = (
        subgroup_gaps(old.dir, new.dir) if subgroups else ([], ["cross-model subgroup gap not computed"])
    )
    return _clean(
        {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "old": {
                "run_id": old.run_id,
                "run_dir": str(old.dir),
                "plan_sha256": old.deltas.get("plan_sha256"),
            },
            "new": {
                "run_id": new.run_id,
                "run_dir": str(new.dir),
                "plan_sha256": new.deltas.get("plan_sha256"),
            },
            "match_keys": [*MATCH_KEYS, "side"],
            "convention": "a - b within each run; changes are new - old",
            "definition": {
                "gap": "difference in differences per matched pair: (a - b | new) - (a - b | old); positive: a - b grew",
                "level_a": "per matched call of condition a: new - old",
                "level_b": "per matched call of condition b: new - old",
            },
            "interval": interval,
            "interval_clusters": "speaker",
            "min_speakers": need,
            "alpha": a,
            "cells": cells,
            "subgroup_gaps": gaps,
            "notes": [*notes, *gap_notes],
        }
    )


def write_comparison(doc: dict[str, Any], out_dir: str | Path) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / COMPARISON_JSON
    atomic_write_json(path, _clean(doc))
    return path


def _clean(obj: Any) -> Any:
    """JSON-safe: NaN and infinities (an interval the sample cannot bound) become null."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _num(obj)
    return obj


def largest_changes(doc: dict[str, Any], of: Sequence[str] = ("gap",), top: int = 5) -> list[dict[str, Any]]:
    """The changes whose interval excludes zero, largest first, with their cell label (for lines and reports)."""
    rows = []
    for cell in doc.get("cells", []):
        for c in cell.get("changes", []):
            lo, hi = c.get("ci_low"), c.get("ci_high")
            if c["of"] in of and lo is not None and hi is not None and (lo > 0 or hi < 0):
                rows.append({**c, "label": cell["label"], "cell": cell["cell"]})
    rows.sort(key=lambda r: -abs(r["estimate"] or 0.0))
    return rows[:top]
