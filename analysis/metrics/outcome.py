"""Terminal outcome family: `voice_audit.harness.model.outcome.judge_outcome`, vectorised, then acceptability.

Both walk the same ordered rule table (`Scenario.outcome_rules`, built by `voice_audit.scenarios.outcome_rules`;
a unit test checks both agree on hand-built logs), so analysis and the runtime's own record judge a call the same way for every adapter. A
`non_service` event (the agent did not serve the caller) makes the call `unresolved` with its flag.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.table import EventTable
from voice_audit.harness.model.failures import NON_SERVICE_FLAGS
from voice_audit.harness.model.outcome import NO_RULE
from voice_audit.scenarios import BUILTIN_OUTCOMES, OutcomeRules, Scenario, outcome_rules

_NON_SERVICE = frozenset(NON_SERVICE_FLAGS)
_NOT_REMEDIES = frozenset({"escalated", "denied", "unresolved"})


def _table(rules: object) -> OutcomeRules:
    return (
        rules if isinstance(rules, OutcomeRules) else outcome_rules(rules if isinstance(rules, str) else None)
    )


def judge(table: EventTable, rules: pd.Series) -> pd.DataFrame:
    """Columns outcome_terminal, outcome_flags, outcome_source, outcome_rule (the rule that decided,
    in words) and outcome_unbacked (a remedy
    recognised from the agent's words alone, with no successful tool behind it). `rules` is indexed
    by episode id and holds each episode's `Scenario.outcome_rules` (a domain name stands for its
    built-in table)."""
    n = table.n_episodes
    tables = [_table(r) for r in rules.reindex(table.episodes).to_numpy(dtype=object)]
    results = table.of_type("tool_result")
    has_result = np.zeros(n, dtype=bool)
    has_result[results["ep"].unique()] = True
    ok = results[results["ok"] == 1.0]
    ok_name: dict[str, np.ndarray] = {}
    for name, sub in ok.groupby("name", sort=False):
        ok_name[str(name)] = np.zeros(n, dtype=bool)
        ok_name[str(name)][sub["ep"].unique()] = True
    none = np.zeros(n, dtype=bool)

    def all_ok(tools: frozenset[str]) -> np.ndarray:
        hit = np.ones(n, dtype=bool)
        for t in tools:
            hit &= ok_name.get(t, none)
        return hit

    # Escalation flags come from the arguments of the call whose result was ok (last call id wins).
    calls = table.of_type("tool_call", columns=["ep", "call_id", "arg_flags"]).drop_duplicates(
        ["ep", "call_id"], keep="last"
    )
    esc_ok = ok.loc[ok["name"] == "escalate_to_human", ["ep", "call_id"]].merge(
        calls, on=["ep", "call_id"], how="left"
    )
    flag_sets: list[set[str]] = [set() for _ in range(n)]
    for ep, raw in zip(esc_ok["ep"].to_numpy(), esc_ok["arg_flags"].to_numpy(), strict=True):
        if isinstance(raw, str) and raw:
            flag_sets[int(ep)].update(raw.split(","))
    non_service = np.zeros(n, dtype=bool)
    ns = table.of_type("non_service", columns=["ep", "reason"])
    reasons: dict[int, set[str]] = {}
    for ep, reason in zip(ns["ep"].to_numpy(), ns["reason"].to_numpy(dtype=object), strict=True):
        non_service[int(ep)] = True
        if isinstance(reason, str) and reason:
            flag_sets[int(ep)].add(reason)
            reasons.setdefault(int(ep), set()).add(reason)

    last_handoff = np.full(n, None, dtype=object)
    hand = table.of_type("handoff", columns=["ep", "status"]).groupby("ep")["status"].last()
    last_handoff[hand.index.to_numpy()] = hand.to_numpy()
    dec = (
        table.of_type("caller_decision", columns=["ep", "classification"])
        .groupby("ep")["classification"]
        .last()
    )
    last_dec = np.full(n, None, dtype=object)
    last_dec[dec.index.to_numpy()] = dec.to_numpy()
    has_dec = np.zeros(n, dtype=bool)
    has_dec[dec.index.to_numpy()] = True
    hung = np.zeros(n, dtype=bool)
    hung[table.of_type("hang_up", columns=["ep"])["ep"].unique()] = True

    outcome = np.full(n, "unresolved", dtype=object)
    source = np.full(n, "none", dtype=object)
    decided_by = np.full(n, NO_RULE, dtype=object)
    by_table: dict[OutcomeRules, list[int]] = {}
    for i, t in enumerate(tables):
        by_table.setdefault(t, []).append(i)
    for rt, members in by_table.items():
        mine = np.zeros(n, dtype=bool)
        mine[members] = True
        for f in rt.flags:
            for ep in np.flatnonzero(mine & all_ok(f.tools)):
                flag_sets[int(ep)].add(f.flag)
        decided = non_service.copy()
        for rule in rt.rules:
            if rule.tools:
                hit = has_result & all_ok(rule.tools)
            else:
                hit = last_handoff == "confirmed" if rule.handoff else last_dec == rule.reading
            take = mine & hit & ~decided
            outcome[take] = rule.outcome
            source[take] = rule.source
            decided_by[take] = rule.describe()
            decided |= take
        rest = mine & ~decided
        source[rest & ((last_dec == "confirmation") | (hung & has_dec))] = "agent_words"
    outcome[non_service] = "unresolved"
    source[non_service] = "non_service"
    for ep in np.flatnonzero(non_service):
        decided_by[ep] = "not served: " + ",".join(sorted(reasons.get(int(ep), set())))
    unbacked = (source == "agent_words") & ~np.isin(outcome, list(_NOT_REMEDIES))
    return pd.DataFrame(
        {
            "outcome_terminal": outcome,
            "outcome_flags": [",".join(sorted(s)) for s in flag_sets],
            "outcome_source": source,
            "outcome_unbacked": unbacked.astype(float),
            "outcome_rule": decided_by,
        },
        index=table.episodes,
    )


def acceptability(
    judged: pd.DataFrame, scenario_id: pd.Series, scenarios: Mapping[str, Scenario | None]
) -> pd.DataFrame:
    """outcome_acceptable/anomalous (NaN where the scenario could not be loaded) and one 0/1 column per outcome."""
    sid = scenario_id.reindex(judged.index)
    keys = pd.DataFrame({"sid": sid, "o": judged["outcome_terminal"], "f": judged["outcome_flags"]})
    verdict: dict[tuple[object, object, object], float] = {}
    for s, o, f in keys.drop_duplicates().itertuples(index=False):
        sc = scenarios.get(str(s))
        flags = frozenset(str(f).split(",")) - {""} if isinstance(f, str) else frozenset()
        verdict[(s, o, f)] = (
            np.nan
            if sc is None or not isinstance(o, str)
            else float(sc.is_acceptable(o, flags) and not flags & _NON_SERVICE)
        )
    # object arrays, not Arrow's per-item iterator (a third of a second over 100k episodes)
    rows = zip(*(keys[c].to_numpy(dtype=object) for c in ("sid", "o", "f")), strict=True)
    acc = np.array([verdict[k] for k in rows], dtype=float)
    out = pd.DataFrame({"outcome_acceptable": acc, "outcome_anomalous": 1.0 - acc}, index=judged.index)
    terminal = judged["outcome_terminal"]
    for o in BUILTIN_OUTCOMES:
        out[f"outcome_{o}"] = np.where(terminal.isna(), np.nan, (terminal == o).astype(float))
    return out
