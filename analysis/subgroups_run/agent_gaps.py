"""Cross-agent gap on a run folder: the same synthetic callers through two agents, subgroup by subgroup.

gap(I, M1, M2) = m(I, M2) - m(I, M1), matched on caller_id (the planner gives a caller the same id for
every agent). The paired test on per-caller differences ranks the subgroups. Only caller attributes
enter (persona, scenario, channel, and the stimulus measures of the caller's opening anchor, which
are the same for every agent): realised-call measures depend on the conversation each agent led, so
they are not a property the two calls share.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from voice_audit.analysis.subgroups import (
    GapInputError,
    GapResult,
    Ranking,
    SubgroupWarning,
    cross_agent_gap,
    rank_subgroups,
)
from voice_audit.analysis.subgroups_run.attributes import CONTEXT, PERSONA, STIMULUS
from voice_audit.analysis.subgroups_run.options import MiningOptions
from voice_audit.analysis.subgroups_run.outcomes import MetricInfo, metric_info
from voice_audit.analysis.subgroups_run.run_mining import EpisodeTable, epsilon_for, select_attributes

KEY = "caller_id"
GAP_ATTRIBUTES: tuple[str, ...] = (*PERSONA, *(c for c in CONTEXT if c != "agent"), *STIMULUS)


@dataclass(frozen=True)
class Side:
    """One agent of one run."""

    run_id: str
    agent: str

    @property
    def label(self) -> str:
        return f"{self.run_id}:{self.agent}"


@dataclass(frozen=True)
class GapReport:
    """The gap of M2 over M1 for every frequent caller subgroup, ranked per metric (worse for M2 first)."""

    m1: Side
    m2: Side
    result: GapResult
    attributes: tuple[str, ...]
    dropped_attributes: dict[str, str]
    metrics: tuple[str, ...]
    dropped_metrics: dict[str, str]
    rankings: dict[str, Ranking]
    info: dict[str, MetricInfo]
    min_support: float


def agent_frame(table: EpisodeTable, agent: str) -> pd.DataFrame:
    """One row per caller for `agent`: caller attributes and metrics (a retried caller keeps its last call)."""
    rows = table.binned["agent"] == agent
    frame = pd.concat([table.binned.loc[rows, [KEY, *GAP_ATTRIBUTES]], table.outcomes.loc[rows]], axis=1)
    return frame.drop_duplicates(KEY, keep="last").reset_index(drop=True)


def agents_of(table: EpisodeTable) -> list[str]:
    """Agents in the campaign's order (then any others in order of appearance)."""
    present = list(dict.fromkeys(table.binned["agent"].astype(str)))
    return [a for a in table.agents if a in present] + [a for a in present if a not in table.agents]


def compare_agents(
    t1: EpisodeTable, agent1: str, t2: EpisodeTable, agent2: str, options: MiningOptions | None = None
) -> GapReport:
    """Gap of (t2, agent2) over (t1, agent1) on their shared callers."""
    opts = options or MiningOptions()
    f1, f2 = agent_frame(t1, agent1), agent_frame(t2, agent2)
    if len(f1) == 0 or len(f2) == 0:
        missing = agent1 if len(f1) == 0 else agent2
        raise GapInputError(f"agent {missing!r} has no episodes; choose agents from the run(s)")
    shared = set(f1[KEY]) & set(f2[KEY])
    if not shared:
        raise GapInputError(
            f"{t1.run_id}:{agent1} and {t2.run_id}:{agent2} share no caller_id; "
            "compare runs planned from the same campaign (same seed, pairs, voices, replicates)"
        )
    matched = f1[f1[KEY].isin(shared)]
    attributes, dropped = select_attributes(matched, GAP_ATTRIBUTES, opts)
    metrics: list[str] = []
    dropped_metrics: dict[str, str] = {}
    for m in [c for c in t1.outcomes.columns if c in t2.outcomes.columns]:
        a = f1.loc[f1[KEY].isin(shared), m].to_numpy(dtype=np.float64, na_value=np.nan)
        b = f2.loc[f2[KEY].isin(shared), m].to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isnan(a).all() or np.isnan(b).all():
            dropped_metrics[m] = "no value for one of the agents on the shared callers"
        else:
            metrics.append(m)
    if not metrics:
        raise GapInputError("no metric has values for both agents on the shared callers; nothing to compare")
    min_support = opts.support_for(len(shared))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SubgroupWarning)
        result = cross_agent_gap(
            f1,
            f2,
            key=KEY,
            outcomes=metrics,
            attributes=attributes,
            min_support=min_support,
            max_length=opts.max_length,
            max_itemsets=opts.max_itemsets,
        )
    info = {m: metric_info(m) for m in metrics}
    rankings = {}
    for m in metrics:
        rankings[m] = rank_subgroups(
            result,
            m,
            by=opts.rank_by,
            epsilon=epsilon_for(opts, f2[m]) if opts.epsilon is None else opts.epsilon,
            direction=info[m].direction,
            test="paired",
            alpha=opts.alpha,
            confidence=opts.confidence,
        )
    return GapReport(
        m1=Side(t1.run_id, agent1),
        m2=Side(t2.run_id, agent2),
        result=result,
        attributes=tuple(attributes),
        dropped_attributes=dropped,
        metrics=tuple(metrics),
        dropped_metrics=dropped_metrics,
        rankings=rankings,
        info=info,
        min_support=min_support,
    )


def gaps_within(
    table: EpisodeTable, options: MiningOptions | None = None, agents: list[str] | None = None
) -> list[GapReport]:
    """Every pair of agents of one run, M1 listed first in the campaign (or the order given)."""
    names = agents or agents_of(table)
    return [compare_agents(table, a, table, b, options) for a, b in combinations(names, 2)]


def gaps_against(
    this: EpisodeTable, baseline: EpisodeTable, options: MiningOptions | None = None
) -> list[GapReport]:
    """This run (M2) against a baseline run (M1): agents paired by name, or the only agent of each."""
    mine_agents, base_agents = agents_of(this), agents_of(baseline)
    if len(mine_agents) == 1 and len(base_agents) == 1:
        pairs = [(base_agents[0], mine_agents[0])]
    else:
        pairs = [(a, a) for a in base_agents if a in mine_agents]
    if not pairs:
        raise GapInputError(
            f"runs {baseline.run_id} and {this.run_id} have no agent in common ({base_agents} vs {mine_agents}); "
            "compare single-agent runs or runs with the same agent names"
        )
    return [compare_agents(baseline, a1, this, a2, options) for a1, a2 in pairs]
