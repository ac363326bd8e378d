"""All event-log families for every episode of a table: one row per episode, one column per metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from analysis.metrics import burden, outcome, safety, speech, tools
from analysis.metrics.table import EventTable
from scenarios import Scenario


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
            safety.extract(table, meta["scenario_id"], scenarios, exposed, burden_cols["burden_esc_status"]),
        ],
        axis=1,
    )
    out.index.name = "episode_id"
    return out
