"""Run-level mining: a run folder's episodes -> attribute table -> every metric mined in one pass -> rankings.

The engine (`voice_audit.analysis.subgroups`) does the statistics; this module decides what goes in (which
attributes survive, which metrics, which direction is harm) and keeps what came out together.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.subgroups import (
    Ranking,
    SubgroupError,
    Subgroups,
    SubgroupWarning,
    TooManyLevelsError,
    mine,
    rank_subgroups,
)
from voice_audit.analysis.subgroups_run.attributes import (
    ALL_ATTRIBUTES,
    REALISED,
    SIGNALS,
    discretise_attributes,
    episode_attributes,
)
from voice_audit.analysis.subgroups_run.options import MiningOptions
from voice_audit.analysis.subgroups_run.outcomes import MetricInfo, load_metrics, metric_info, outcome_table
from voice_audit.analysis.subgroups_run.signals import REALISED_REASON
from voice_audit.harness.runlog import RunReader


@dataclass(frozen=True)
class EpisodeTable:
    """Binned attributes and blanked outcomes of one run, one row per episode (index episode_id)."""

    run_dir: Path
    run_id: str
    raw: pd.DataFrame
    binned: pd.DataFrame
    edges: dict[str, tuple[list[str], list[float]]]
    outcomes: pd.DataFrame
    metrics: tuple[str, ...]
    dropped_metrics: dict[str, str]
    notes: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()  # the campaign's agent order (M1 of a within-run gap comes first)


@dataclass(frozen=True)
class RunMining:
    """Everything one `voice-audit subgroups` pass produced, before it is written."""

    table: EpisodeTable
    options: MiningOptions
    attributes: tuple[str, ...]
    dropped_attributes: dict[str, str]
    min_support: float
    mined: Subgroups
    rankings: dict[str, Ranking]
    epsilons: dict[str, float]
    info: dict[str, MetricInfo] = field(default_factory=dict)


def load_table(run_dir: str | Path, options: MiningOptions | None = None) -> EpisodeTable:
    """Attribute and outcome table of a run; signal measures come from (and fill) the run's cache."""
    opts = options or MiningOptions()
    raw = episode_attributes(run_dir, signals=opts.signals)
    if len(raw) == 0:
        raise SubgroupError(f"{run_dir}: no episode records to mine; run the campaign first")
    metrics, note = load_metrics(run_dir)
    outcomes, names, dropped = outcome_table(raw, metrics)
    binned, edges = discretise_attributes(raw)
    run_id = str(raw["run_id"].iloc[0])
    return EpisodeTable(
        run_dir=Path(run_dir),
        run_id=run_id,
        raw=raw,
        binned=binned,
        edges=edges,
        outcomes=outcomes,
        metrics=tuple(names),
        dropped_metrics=dropped,
        notes=(note,) if note else (),
        agents=tuple(a.name for a in RunReader(run_dir).manifest.campaign.agents),
    )


def _same_split(a: pd.Series, b: pd.Series) -> bool:
    """True when two attributes partition the episodes identically (e.g. gender when every voice profile
    has its own gender): mining both would only duplicate every itemset."""
    if a.isna().to_numpy().tolist() != b.isna().to_numpy().tolist():
        return False
    pairs = pd.DataFrame({"a": a.astype(object), "b": b.astype(object)}).dropna()
    return bool(pairs.groupby("a")["b"].nunique().max() == 1 and pairs.groupby("b")["a"].nunique().max() == 1)


def select_attributes(
    df: pd.DataFrame, candidates: tuple[str, ...], options: MiningOptions
) -> tuple[list[str], dict[str, str]]:
    """Attributes worth mining, and why each other one was left out.

    A realised-call attribute is dropped unless `options.realised` (it is a consequence of the
    agent's treatment, so mining burden over it is circular). A single-valued or all-missing
    attribute is dropped with a note (it splits nothing), and so is one that splits the episodes
    exactly as an earlier attribute does; one with more than `max_levels` values is an error,
    because mining it would drown the lattice.
    """
    kept: list[str] = []
    dropped: dict[str, str] = {}
    unknown = sorted(set(options.exclude) - set(ALL_ATTRIBUTES))
    if unknown:
        raise SubgroupError(
            f"unknown attribute {', '.join(unknown)} in --exclude; choose from {', '.join(ALL_ATTRIBUTES)}"
        )
    for name in candidates:
        if name in options.exclude:
            dropped[name] = "excluded"
            continue
        if name in REALISED and not options.realised:
            dropped[name] = REALISED_REASON
            continue
        n_levels = int(df[name].nunique(dropna=True))
        if n_levels == 0:
            dropped[name] = "all missing"
        elif n_levels == 1:
            dropped[name] = f"single value {df[name].dropna().iloc[0]!s}"
        elif n_levels > options.max_levels:
            raise TooManyLevelsError(
                f"attribute {name!r} has {n_levels} distinct values (> {options.max_levels}); "
                f"exclude it (--exclude {name}) or raise --max-levels"
            )
        else:
            alias = next((k for k in kept if _same_split(df[k], df[name])), None)
            if alias is None:
                kept.append(name)
            else:
                dropped[name] = f"same split as {alias}"
    if not kept:
        raise SubgroupError(
            "no attribute varies across the episodes ("
            + "; ".join(f"{k}: {v}" for k, v in dropped.items())
            + ")"
        )
    return kept, dropped


def epsilon_for(options: MiningOptions, values: pd.Series) -> float:
    """Absolute redundancy threshold for one metric (see MiningOptions)."""
    if options.epsilon is not None:
        return float(options.epsilon)
    sd = float(np.nanstd(values.to_numpy(dtype=np.float64, na_value=np.nan)))
    return options.epsilon_rel * sd if np.isfinite(sd) else 0.0


def mine_table(
    frame: pd.DataFrame,
    metrics: list[str],
    attributes: list[str],
    info: dict[str, MetricInfo],
    options: MiningOptions,
) -> tuple[Subgroups, float]:
    """One engine pass for all metrics; engine warnings are pre-empted by `select_attributes`."""
    min_support = options.support_for(len(frame))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SubgroupWarning)
        mined = mine(
            frame,
            metrics,
            attributes,
            min_support=min_support,
            boolean=[m for m in metrics if info[m].kind == "binary"],
            max_length=options.max_length,
            max_itemsets=options.max_itemsets,
            max_levels=options.max_levels,
        )
    return mined, min_support


def mine_run(
    run_dir: str | Path, options: MiningOptions | None = None, table: EpisodeTable | None = None
) -> RunMining:
    """Mine every outcome and burden metric of a run in one pass, then prune and rank each (BH FDR)."""
    opts = options or MiningOptions()
    tab = table or load_table(run_dir, opts)
    candidates = tuple(a for a in ALL_ATTRIBUTES if opts.signals or a not in SIGNALS)
    attributes, dropped = select_attributes(tab.binned, candidates, opts)
    metrics = list(tab.metrics)
    if not metrics:
        raise SubgroupError("no outcome or burden metric has a value on any completed call; nothing to mine")
    info = {m: metric_info(m) for m in metrics}
    frame = pd.concat([tab.binned[attributes], tab.outcomes[metrics]], axis=1)
    mined, min_support = mine_table(frame, metrics, attributes, info, opts)
    rankings: dict[str, Ranking] = {}
    epsilons: dict[str, float] = {}
    scored: Any = mined  # Subgroups.effect narrows `test` to a Literal; mypy then rejects it as Scored
    for m in metrics:
        epsilons[m] = epsilon_for(opts, tab.outcomes[m])
        rankings[m] = rank_subgroups(
            scored,
            m,
            by=opts.rank_by,
            epsilon=epsilons[m],
            direction=info[m].direction,
            test="auto",
            alpha=opts.alpha,
            confidence=opts.confidence,
        )
    return RunMining(
        table=tab,
        options=opts,
        attributes=tuple(attributes),
        dropped_attributes=dropped,
        min_support=min_support,
        mined=mined,
        rankings=rankings,
        epsilons=epsilons,
        info=info,
    )
