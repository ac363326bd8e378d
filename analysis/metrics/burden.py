"""Path-burden family: Repair(e), Auth(e), Esc(e) (docs/method/index.md section 4), repeated questions, time.

Operationalisation, from the caller's logged decisions (the caller policy is the one observer that
is identical for every adapter):

* Repair(e): caller `repeat`/`rephrase` utterances (or a `challenge_answer`, when the repair
  request also asked for a fact) whose most recent preceding `caller_decision` has a
  classification in the plan's `repair.error_classifications` (default `repair_request`:
  "sorry, could you repeat that"). Repeats after a *silent* agent turn are counted separately
  (`burden_repeat_after_silence`), and a request for a human after N repairs is not a repair turn.
  Mishearings the agent never admits (wrong slot, irrelevant answer) are invisible to the caller
  policy and therefore not counted.
* Auth(e): distinct facts across `challenge` decisions and any other decision that logged a
  `challenge_fact` (a repair request that also asks for a fact; comma-joined); a generic identity
  check without a fact counts as one distinct challenge "generic".
* Esc(e): from the first `escalation_requested` to the first later `handoff` the caller heard
  (confirmed or refused); without one, to the first successful `escalate_to_human` tool result (a
  silent transfer); without either, to the `hang_up`. 0 without a request; missing when the log
  ends with none of them (a failed call). The harness stamps the
  request at the end of the caller's request utterance, so Esc excludes the persona's speaking
  time; an answer that lands while the request is still being said counts with Esc = 0.
* Waiting for a human and time to resolution are about the agent: the caller's own speaking time
  inside each window (`caller_time`) is left out of them and reported beside them
  (`burden_esc_caller_s`, `burden_resolution_caller_s`), so a slower voice does not read as a
  slower agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.caller_time import caller_speech_s
from voice_audit.analysis.metrics.table import EventTable, map_unique

_RESOLVING_TOOL = {
    "refund_issued": "issue_refund",
    "plan_corrected": "change_plan",
    "credit_issued": "issue_credit",
    "partial_credit": "issue_credit",
    "escalated": "escalate_to_human",
}
_NORM = re.compile(r"[^a-z0-9 ]+")


def _count(table: EventTable, rows: pd.DataFrame, fill: float = 0.0) -> pd.Series:
    return table.per_episode(rows.groupby("ep").size().astype(float), fill)


def repair(table: EventTable, error_classifications: Sequence[str] = ("repair_request",)) -> pd.DataFrame:
    sub = table.of_type(
        "caller_decision", "caller_utterance_start", columns=["ep", "type", "classification", "kind"]
    )
    last_cls = sub["classification"].where(sub["type"] == "caller_decision").groupby(sub["ep"]).ffill()
    # After a repair request that also asks for a fact, the caller's answer is its clarification turn.
    repeats = (sub["type"] == "caller_utterance_start") & sub["kind"].isin(
        ("repeat", "rephrase", "challenge_answer")
    )
    decisions = table.of_type("caller_decision", columns=["ep", "classification"])
    return pd.DataFrame(
        {
            "burden_repair": _count(table, sub[repeats & last_cls.isin(list(error_classifications))]),
            "burden_repair_requests": _count(
                table, decisions[decisions["classification"] == "repair_request"]
            ),
            "burden_repeat_after_silence": _count(table, sub[repeats & (last_cls == "silence")]),
        }
    )


def auth(table: EventTable, tool_exposed: pd.Series) -> pd.DataFrame:
    dec = table.of_type("caller_decision", columns=["ep", "classification", "challenge_fact"])
    # A challenge inside another act ("Sorry, I missed that. What is your name?") logs its facts
    # under the primary act (repair_request); it counts for Auth all the same.
    ch = dec.loc[
        (dec["classification"] == "challenge") | dec["challenge_fact"].notna(), ["ep", "challenge_fact"]
    ]
    codes, named = pd.factorize(ch["challenge_fact"].fillna("generic"))
    split = [str(v).split(",") for v in named]  # once per distinct value, rows share the lists
    facts = ch.assign(fact=pd.Series([split[c] for c in codes], index=ch.index, dtype=object)).explode("fact")
    distinct = facts.drop_duplicates(["ep", "fact"])
    res = table.of_type("tool_result")
    verify = res[(res["name"] == "verify_identity") & (res["ok"] == 0.0)]
    failures = _count(table, verify).where(tool_exposed.reindex(table.episodes).fillna(False).astype(bool))
    return pd.DataFrame(
        {
            "burden_auth": _count(table, distinct),
            "burden_auth_challenge_turns": _count(table, ch),
            "burden_auth_reasks": _count(table, facts) - _count(table, distinct),
            "burden_auth_tool_failures": failures,
        }
    )


def _requests(table: EventTable) -> pd.DataFrame:
    """First escalation request per episode with `anchor`: the seq after which a terminal event
    answers it. The harness stamps the request at the END of the caller's request utterance, so a
    handoff the agent made while that utterance was still playing (streaming) lies between the
    utterance start and the stamp; it answers the request with Esc = 0. Older logs stamped the
    request at the caller's decision, before the utterance: a caller decision between the last
    utterance start and the request resets the anchor to the request itself."""
    sub = table.of_type(
        "caller_utterance_start",
        "caller_decision",
        "escalation_requested",
        columns=["ep", "seq", "t_ms", "type"],
    )
    marker = pd.Series(
        np.select(
            [sub["type"] == "caller_utterance_start", sub["type"] == "caller_decision"],
            [sub["seq"].astype(float), -1.0],
            np.nan,
        ),
        index=sub.index,
    )
    last_start = marker.groupby(sub["ep"]).ffill()
    is_req = (sub["type"] == "escalation_requested").to_numpy()
    req = sub.loc[is_req, ["ep", "seq", "t_ms"]]
    start = last_start.to_numpy()[is_req]
    req = req.assign(anchor=np.where(np.nan_to_num(start, nan=-1.0) >= 0, start, req["seq"].to_numpy()))
    return req.drop_duplicates("ep")


def escalation(table: EventTable) -> pd.DataFrame:
    req = _requests(table)
    term = table.of_type("handoff", "hang_up", "tool_result")
    term = term.loc[
        (term["type"] != "tool_result") | ((term["name"] == "escalate_to_human") & (term["ok"] == 1.0)),
        ["ep", "seq", "t_ms", "type", "status"],
    ]
    joined = term.merge(req, on="ep", suffixes=("", "_req"))
    joined = joined[joined["seq"] > joined["anchor"]]
    # The handoff the caller hears settles Esc; an escalate_to_human result only when no handoff
    # was heard (a silent transfer), a hang-up only when neither came. Agents call the tool before
    # they say "please hold ... transferring you": ending at the tool result would hide every
    # hold from trace-exposing agents, and only from them (found by the pipeline calibration).
    rank = np.select([joined["type"] == "handoff", joined["type"] == "tool_result"], [0, 1], 2)
    joined = joined.assign(rank=rank).sort_values(["ep", "rank", "seq"], kind="stable")
    joined = joined.drop_duplicates("ep")
    status = np.where(
        joined["type"] == "hang_up",
        "ended_without_handoff",
        np.where(joined["type"] == "tool_result", "confirmed", joined["status"].fillna("confirmed")),
    )
    esc_s = pd.Series(0.0, index=np.arange(table.n_episodes))
    esc_status = pd.Series("none", index=np.arange(table.n_episodes), dtype=object)
    esc_s[req["ep"].to_numpy()] = np.nan
    esc_status[req["ep"].to_numpy()] = "open"
    esc_s[joined["ep"].to_numpy()] = np.maximum(joined["t_ms"] - joined["t_ms_req"], 0).to_numpy() / 1000.0
    esc_status[joined["ep"].to_numpy()] = status
    eps = joined["ep"].to_numpy()
    spoke = caller_speech_s(
        table,
        pd.Series(joined["t_ms_req"].to_numpy(dtype=float), index=eps),
        pd.Series(joined["t_ms"].to_numpy(dtype=float), index=eps),
    )
    caller_s = pd.Series(0.0, index=np.arange(table.n_episodes))
    caller_s[req["ep"].to_numpy()] = np.nan
    caller_s[eps] = spoke.to_numpy()
    esc_s[eps] = np.maximum(esc_s[eps].to_numpy() - spoke.to_numpy(), 0.0)
    esc_s.index = esc_status.index = caller_s.index = table.episodes
    return pd.DataFrame(
        {"burden_esc_s": esc_s, "burden_esc_status": esc_status, "burden_esc_caller_s": caller_s}
    )


def normalise_words(text: pd.Series) -> pd.Series:
    return map_unique(text, lambda t: " ".join(_NORM.sub(" ", t.lower()).split()))


def repeated_questions(table: EventTable) -> pd.Series:
    dec = table.of_type("caller_decision", columns=["ep", "classification", "heard"])
    q = dec.loc[dec["classification"].isin(("question", "challenge")), ["ep", "heard"]]
    q = q.assign(norm=normalise_words(q["heard"]))
    q = q[q["norm"] != ""]
    return _count(table, q[q.duplicated(["ep", "norm"])]).rename("burden_repeated_questions")


def time_to_resolution(table: EventTable, judged: pd.DataFrame) -> pd.DataFrame:
    """Seconds to the event that settled the outcome (the first successful deciding tool result, or
    the deciding handoff / caller decision when the outcome rests on the agent's words), less the
    caller's own speaking time before it, which is reported beside it."""
    out = pd.Series(np.nan, index=np.arange(table.n_episodes))
    outcome = judged["outcome_terminal"].to_numpy(dtype=object)
    source = judged["outcome_source"].to_numpy(dtype=object)
    ep_tool = np.array(
        [_RESOLVING_TOOL.get(o) if isinstance(o, str) else None for o in outcome], dtype=object
    )
    res = table.of_type("tool_result")
    res = res.loc[res["ok"] == 1.0, ["ep", "name", "t_ms"]]
    res = res[res["name"].to_numpy(dtype=object) == ep_tool[res["ep"].to_numpy()]]
    first = res.groupby("ep")["t_ms"].min()
    tool_eps = first.index[source[first.index.to_numpy()] == "tool_trace"]
    out[tool_eps] = first[tool_eps] / 1000.0
    words = (source == "agent_words") & np.isin(
        outcome, ["escalated", "refund_issued", "credit_issued", "plan_corrected", "denied"]
    )
    handoffs = table.of_type("handoff")
    hand = handoffs[handoffs["status"] == "confirmed"].groupby("ep")["t_ms"].last()
    dec = table.of_type("caller_decision", columns=["ep", "t_ms"]).groupby("ep")["t_ms"].last()
    esc_words = words & (outcome == "escalated")
    other_words = words & (outcome != "escalated")
    out[np.flatnonzero(esc_words)] = hand.reindex(np.flatnonzero(esc_words)).to_numpy() / 1000.0
    out[np.flatnonzero(other_words)] = dec.reindex(np.flatnonzero(other_words)).to_numpy() / 1000.0
    spoke = caller_speech_s(table, pd.Series(0.0, index=out.index).where(out.notna()), out * 1000.0)
    frame = pd.DataFrame(
        {"burden_time_to_resolution_s": (out - spoke).clip(lower=0.0), "burden_resolution_caller_s": spoke}
    )
    frame.index = table.episodes
    return frame


def extract(
    table: EventTable, judged: pd.DataFrame, tool_exposed: pd.Series, error_classifications: Sequence[str]
) -> pd.DataFrame:
    df = table.df
    last_t = table.per_episode(df.groupby("ep")["t_ms"].max().astype(float), fill=0.0) / 1000.0
    decisions = table.of_type("caller_decision", columns=["ep", "classification"])
    turns = _count(table, decisions[decisions["classification"] != "silence"])  # silence is no agent turn
    return pd.concat(
        [
            repair(table, error_classifications),
            auth(table, tool_exposed),
            escalation(table),
            repeated_questions(table),
            time_to_resolution(table, judged),
            turns.rename("burden_agent_turns"),
            last_t.rename("burden_call_s"),
        ],
        axis=1,
    )
