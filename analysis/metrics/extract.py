"""All event-log families for every episode of a table: one row per episode, one column per metric."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import pandas as pd

from voice_audit.analysis.metrics import burden, outcome, safety, speech, tools
from voice_audit.analysis.metrics.table import EventTable, join_by_ep
from voice_audit.scenarios import Scenario


def extract_metrics(
    table: EventTable,
    episodes: pd.DataFrame,
    scenarios: Mapping[str, Scenario | None],
    *,
    error_classifications: Sequence[str] = ("repair_request",),
) -> pd.DataFrame:
    """`episodes` (indexed by episode id) supplies scenario_id, agent and, when the run recorded
    it, `exposure_tool_trace`; events supply the rest."""
    meta = episodes.reindex(table.episodes)
    rules = meta["scenario_id"].map(
        lambda s: sc.outcome_rules if (sc := scenarios.get(str(s))) is not None else None
    )
    judged = outcome.judge(table, rules)
    declared = meta["exposure_tool_trace"] if "exposure_tool_trace" in meta.columns else None
    exposed = tools.exposed_by_agent(table, meta["agent"], declared)
    burden_cols = burden.extract(table, judged, exposed, error_classifications)
    out = pd.concat(
        [
            judged,
            outcome.acceptability(judged, meta["scenario_id"], scenarios),
            burden_cols,
            tools.extract(table, exposed),
            speech.extract(table),
            safety.extract(
                table,
                meta["scenario_id"],
                scenarios,
                exposed,
                burden_cols["burden_esc_status"],
                judged["outcome_terminal"],
            ),
        ],
        axis=1,
    )
    out["call_content_sha"] = call_content(table)
    out.index.name = "episode_id"
    return out


def call_content(table: EventTable) -> pd.Series:
    """A digest of what was said and done in each call, in order (the caller's lines, the agent's
    words, the tools called): two calls with the same digest are the same call, whatever their
    timings. Replicates that repeat each other add no evidence (`voice_audit.analysis.deltas.distinct_pairs`)."""
    rows = table.of_type(
        "caller_utterance_start", "agent_transcript", "tool_call", columns=["ep", "type", "text", "name"]
    )
    parts = (
        rows["type"].astype(str)
        + "\x1f"
        + rows["text"].astype(object).fillna("").astype(str)
        + "\x1f"
        + rows["name"].astype(object).fillna("").astype(str)
    )
    joined = join_by_ep(rows["ep"].to_numpy(), parts.tolist(), "\x1e", table.n_episodes)
    return pd.Series(
        [hashlib.sha256(j.encode()).hexdigest()[:16] for j in joined],
        index=table.episodes,
        name="call_content_sha",
        dtype=object,
    )
