"""Terminal outcome family: `harness.model.outcome.judge_outcome`, vectorised, then acceptability.

The rules and their order are those of `judge_outcome` (a unit test checks both agree on hand-built
logs), so analysis and the runtime's own record judge a call the same way for every adapter. A
`non_service` event (the agent did not serve the caller) makes the call `unresolved` with its flag.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from analysis.metrics.table import EventTable
from harness.model.events import NON_SERVICE_FLAGS
from scenarios import OUTCOMES, Scenario

_REMEDY_WORDS = {"billing": "refund_issued", "outage": "credit_issued", "plan": "plan_corrected"}
_NON_SERVICE = frozenset(NON_SERVICE_FLAGS)
_TOOLS = ("issue_refund", "change_plan", "issue_credit", "escalate_to_human", "open_ticket")


def judge(table: EventTable, domain: pd.Series) -> pd.DataFrame:
    """Columns outcome_terminal, outcome_flags, outcome_source; `domain` is indexed by episode id."""
    n = table.n_episodes
    dom = domain.reindex(table.episodes).to_numpy(dtype=object)
    results = table.of_type("tool_result")
    has_result = np.zeros(n, dtype=bool)
    has_result[results["ep"].unique()] = True
    ok = results[results["ok"] == 1.0]
    ok_name = {t: np.zeros(n, dtype=bool) for t in _TOOLS}
    for name, sub in ok.groupby("name", sort=False):
        if name in ok_name:
            ok_name[str(name)][sub["ep"].unique()] = True
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
    for ep in np.flatnonzero(ok_name["open_ticket"]):
        flag_sets[int(ep)].add("ticket_opened")
    for ep in np.flatnonzero(ok_name["issue_credit"] & (dom == "plan")):
        flag_sets[int(ep)].add("difference_credited")
    ticket = ok_name["open_ticket"]
    non_service = np.zeros(n, dtype=bool)
    ns = table.of_type("non_service", columns=["ep", "reason"])
    for ep, reason in zip(ns["ep"].to_numpy(), ns["reason"].to_numpy(dtype=object), strict=True):
        non_service[int(ep)] = True
        if isinstance(reason, str) and reason:
            flag_sets[int(ep)].add(reason)

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

    remedy = np.array(
        [_REMEDY_WORDS.get(d, "unresolved") if isinstance(d, str) else "unresolved" for d in dom],
        dtype=object,
    )
    credit = np.where(ticket & (dom == "outage"), "partial_credit", "credit_issued")
    conds = [
        non_service,
        has_result & ok_name["issue_refund"],
        has_result & (dom == "plan") & ok_name["change_plan"],
        has_result & ok_name["issue_credit"],
        has_result & ok_name["escalate_to_human"],
        last_handoff == "confirmed",
        last_dec == "confirmation",
        last_dec == "denial",
    ]
    outcome = np.select(
        conds,
        ["unresolved", "refund_issued", "plan_corrected", credit, "escalated", "escalated", remedy, "denied"],
        "unresolved",
    )
    tool_src = ~non_service & (conds[1] | conds[2] | conds[3] | conds[4])
    words_src = ~non_service & ~tool_src & (conds[5] | conds[6] | conds[7] | (hung & has_dec))
    source = np.where(
        non_service, "non_service", np.where(tool_src, "tool_trace", np.where(words_src, "agent_words", "none"))
    )
    return pd.DataFrame(
        {
            "outcome_terminal": outcome.astype(object),
            "outcome_flags": [",".join(sorted(s)) for s in flag_sets],
            "outcome_source": source.astype(object),
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
    for o in OUTCOMES:
        out[f"outcome_{o}"] = np.where(terminal.isna(), np.nan, (terminal == o).astype(float))
    return out
