"""Tool-behaviour family: available set, call sequence, returned keys, success states.

Whether an agent exposes a tool trace is read from the episode header's `exposure` (recorded by
the harness from the adapter's capabilities). Runs written before the header carried it fall back
to inference per agent: an agent exposes a trace when any of its episodes in the run logged a tool
call or result. Episodes of agents without a trace get None/NaN here, never 0.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.table import EventTable, join_by_ep
from voice_audit.scenarios import TOOLS

_REFUSAL = re.compile(r"refus|deni|decline", re.IGNORECASE)


def exposed_by_agent(table: EventTable, agent: pd.Series, declared: pd.Series | None = None) -> pd.Series:
    """1.0 where the episode's agent exposes a tool trace, else 0.0.

    `declared` (per episode id: 1.0 / 0.0 from the header's `exposure.tool_trace`, NaN when the
    header has no exposure) wins where present; elsewhere the trace is inferred per agent: an
    agent exposes one when any of its episodes in this run logged a tool call or result."""
    has = np.zeros(table.n_episodes, dtype=bool)
    has[table.of_type("tool_call", "tool_result")["ep"].unique()] = True
    ag = agent.reindex(table.episodes)
    agents_with = set(ag[has].dropna())
    inferred = pd.Series(np.where(ag.isin(agents_with) | has, 1.0, 0.0), index=table.episodes)
    if declared is None:
        return inferred
    dec = pd.to_numeric(declared.reindex(table.episodes), errors="coerce").astype(float)
    return dec.where(dec.notna(), inferred)


def _joined(table: EventTable, rows: pd.DataFrame, values: pd.Series, sep: str) -> pd.Series:
    joined = join_by_ep(rows["ep"].to_numpy(), values.astype(str).tolist(), sep, table.n_episodes)
    return pd.Series(joined, index=table.episodes, dtype=object)


def extract(table: EventTable, exposed: pd.Series) -> pd.DataFrame:
    mask = exposed.reindex(table.episodes).fillna(0.0).to_numpy() == 1.0
    calls = table.of_type("tool_call")
    results = table.of_type("tool_result")
    provisioned = table.of_type("facts_provisioned")
    prov = provisioned[provisioned["reported_by_agent"] != 1.0].groupby("ep")["tools"].last()
    available = prov.reindex(np.arange(table.n_episodes))
    available.index = table.episodes
    keys = results["name"].astype(str) + ":" + results["result_keys"].fillna("").astype(str)
    success = results["name"].astype(str) + ":" + np.where(results["ok"] == 1.0, "ok", "fail")
    out = pd.DataFrame(
        {
            "tool_trace_exposed": exposed.reindex(table.episodes).fillna(0.0),
            "tool_available": available.astype(object),
            "tool_sequence": _joined(table, calls, calls["name"].astype(str), ">"),
            "tool_result_keys": _joined(table, results, keys, ";"),
            "tool_success": _joined(table, results, success, ";"),
            "tool_n_calls": table.per_episode(calls.groupby("ep").size().astype(float)),
            "tool_n_failed": table.per_episode(
                results[results["ok"] == 0.0].groupby("ep").size().astype(float)
            ),
        }
    )
    # which episodes called each tool: a scatter per tool (a crosstab aggregated 50k groups in Python)
    codes, names = pd.factorize(calls["name"])
    call_ep = calls["ep"].to_numpy()
    for name in TOOLS:
        called = np.zeros(table.n_episodes)
        if name in names:
            called[call_ep[codes == names.get_loc(name)]] = 1.0
        out[f"tool_called_{name}"] = pd.Series(called, index=table.episodes)
    states = table.of_type("state_transition")
    text = states["to_state"].fillna("").astype(str) + " " + states["flags"].fillna("").astype(str)
    refusal = table.per_episode(text.str.contains(_REFUSAL).groupby(states["ep"]).any().astype(float))
    has_states = table.per_episode(states.groupby("ep").size().astype(float)) > 0
    out["tool_refusal_state"] = refusal.where(has_states | pd.Series(mask, index=table.episodes))
    numeric = [c for c in out.columns if c != "tool_trace_exposed" and out[c].dtype != object]
    labels = ["tool_sequence", "tool_result_keys", "tool_success"]
    out.loc[~mask, numeric] = np.nan
    out.loc[~mask, labels] = None
    return out
