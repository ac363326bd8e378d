"""The critical subgroups of a run on one metric, and how each maps onto the campaign's matched pairs.

A subgroup is a conjunction of items; persona items can be dialled into a caller directly, the rest
(signal measures such as speaking_rate=high, the agent, the channel) cannot. Either way the pairs
that feed a subgroup are the campaign's pair specs whose episodes fall in it more often than the
subgroup's overall support (lift > 1); for unsettable items we also name the persona levels that are
over-represented in the subgroup, so a reader sees what "speaking_rate=high" meant in callers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from voice_audit.analysis.subgroups import SubgroupError
from voice_audit.analysis.subgroups_run.attributes import PERSONA
from voice_audit.analysis.subgroups_run.outputs import items_of
from voice_audit.analysis.subgroups_run.run_mining import RunMining
from voice_audit.harness.model.campaign import Campaign
from voice_audit.personas import AXES

SETTABLE: frozenset[str] = frozenset({*AXES, "gender", "age_band", "scenario"})


@dataclass(frozen=True)
class Target:
    """One critical subgroup and the pair specs (indices into campaign.pairs) chosen to feed it."""

    rank: int
    itemset: str
    items: dict[str, str]
    divergence: float
    support: float
    support_count: int
    q_value: float
    unsettable: tuple[str, ...]
    over_represented: dict[str, list[tuple[str, float]]]
    pairs: dict[int, tuple[str, ...]]  # pair spec index -> scenarios to run it on
    pair_rates: dict[int, float]


def subgroup_mask(binned: pd.DataFrame, items: dict[str, str]) -> np.ndarray:
    """Rows of the binned attribute table that fall in the subgroup."""
    mask = np.ones(len(binned), dtype=bool)
    for attr, value in items.items():
        mask &= (binned[attr].astype(object).astype(str) == value).to_numpy() & binned[
            attr
        ].notna().to_numpy()
    return mask


def critical(mining: RunMining, metric: str, top: int) -> list[tuple[int, pd.Series]]:
    """The first `top` ranked subgroups whose effect points the harmful way (rank, ranking row)."""
    if metric not in mining.rankings:
        raise SubgroupError(f"metric {metric!r} was not mined; choose one of {', '.join(mining.rankings)}")
    info = mining.info[metric]
    if info.direction == "both":
        raise SubgroupError(
            f"metric {metric!r} has no harmful direction; choose an outcome or burden metric that has one"
        )
    table = mining.rankings[metric].table
    harmful = table["estimate"] < 0 if info.direction == "negative" else table["estimate"] > 0
    rows = table[harmful.to_numpy()].head(top)
    if len(rows) == 0:
        raise SubgroupError(f"no subgroup diverges the harmful way on {metric!r}; nothing to follow up")
    return [(i + 1, row) for i, (_, row) in enumerate(rows.iterrows())]


def resolve_specs(campaign: Campaign) -> list[tuple[tuple[str, ...], tuple[str, ...], str]]:
    """(condition a, condition b, contrast) per pair spec, conditions as level tuples over the five axes."""
    out = []
    for spec in campaign.pairs:
        a = {**spec.base, **spec.a}
        b = {**spec.base, **spec.b}
        out.append(
            (tuple(a.get(x, "") for x in AXES), tuple(b.get(x, "") for x in AXES), ",".join(spec.contrast))
        )
    return out


def spec_of_episodes(raw: pd.DataFrame, campaign: Campaign) -> np.ndarray:
    """Index of the pair spec each episode was planned from (-1 when none matches)."""
    keys = {k: i for i, k in enumerate(resolve_specs(campaign))}
    cond = raw[list(AXES)].astype(str).apply(tuple, axis=1)
    sides = pd.DataFrame({"pair_id": raw["pair_id"], "side": raw["side"], "cond": cond})
    a = sides[sides["side"] == "a"].drop_duplicates("pair_id").set_index("pair_id")["cond"]
    b = sides[sides["side"] == "b"].drop_duplicates("pair_id").set_index("pair_id")["cond"]
    out = np.full(len(raw), -1, dtype=np.int64)
    for n, (pid, contrast) in enumerate(zip(raw["pair_id"], raw["contrast"], strict=True)):
        if pid in a.index and pid in b.index:
            out[n] = keys.get((a[pid], b[pid], str(contrast)), -1)
    return out


def over_represented(
    raw: pd.DataFrame, mask: np.ndarray, limit: int = 3
) -> dict[str, list[tuple[str, float]]]:
    """Per persona axis, the levels whose share in the subgroup exceeds their share overall (with the lift)."""
    out: dict[str, list[tuple[str, float]]] = {}
    if not mask.any():
        return out
    for axis in PERSONA:
        col = raw[axis].astype(object)
        overall = col.value_counts(normalize=True)
        inside = col[mask].value_counts(normalize=True)
        lifts = [
            (str(lv), float(share / overall[lv]))
            for lv, share in inside.items()
            if share / overall[lv] > 1.0 + 1e-9
        ]
        if lifts:
            out[axis] = sorted(lifts, key=lambda x: -x[1])[:limit]
    return out


def map_target(
    mining: RunMining,
    campaign: Campaign,
    metric: str,
    rank: int,
    row: pd.Series,
    specs: np.ndarray,
    max_pairs: int,
) -> Target:
    """Choose the pair specs that feed one subgroup, with the scenarios its episodes came from."""
    tab = mining.table
    i = int(row["itemset_id"])
    items = items_of(mining.mined.lattice, i)
    mask = subgroup_mask(tab.binned, items)
    support = float(mask.mean())
    rates: dict[int, float] = {}
    for s in sorted(set(specs[mask].tolist()) - {-1}):
        in_spec = specs == s
        rates[s] = float(mask[in_spec].mean())
    chosen = [s for s, r in rates.items() if r > support + 1e-9] or [
        s for s, r in rates.items() if r == max(rates.values())
    ]
    chosen = sorted(chosen, key=lambda s: (-rates[s], s))[:max_pairs]
    scen_order = list(campaign.scenarios)
    pairs: dict[int, tuple[str, ...]] = {}
    for s in chosen:
        if "scenario" in items:
            scen = {items["scenario"]}
        else:
            scen = set(tab.raw.loc[mask & (specs == s), "scenario"].astype(str))
        pairs[s] = tuple(x for x in scen_order if x in scen)
    unsettable = tuple(a for a in items if a not in SETTABLE)
    return Target(
        rank=rank,
        itemset=str(row["itemset"]),
        items=items,
        divergence=float(mining.mined.divergence(metric)[i]),
        support=float(row["support"]),
        support_count=int(row["support_count"]),
        q_value=float(row["q_value"]),
        unsettable=unsettable,
        over_represented=over_represented(tab.raw, mask) if unsettable else {},
        pairs=pairs,
        pair_rates={s: rates[s] for s in chosen},
    )
