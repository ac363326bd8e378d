"""Speech-behaviour family from event times: latency, overlap, interruptions, speech rate.

Latency of a caller turn = first `agent_speech_start` at or after the caller utterance began,
minus the end of the utterance's audio clip (negative when the agent started before the caller
finished); a caller turn that got no agent speech before the next caller utterance has none. The
clip ends after its trailing silence, so this reads shorter than what the caller hears; the
voice-to-voice latency on the recording is `voice_audit.analysis.metrics.voice_latency`. F0 comes from audio and
lives in `voice_audit.analysis.audio.measures`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.table import EventTable, map_unique


def _caller_turns(table: EventTable) -> pd.DataFrame:
    starts = table.of_type("caller_utterance_start", columns=["ep", "turn", "t_ms", "duration_ms"])
    ends = table.of_type("caller_utterance_end", columns=["ep", "turn", "t_ms"]).drop_duplicates(
        ["ep", "turn"], keep="last"
    )
    turns = starts.merge(ends, on=["ep", "turn"], how="left", suffixes=("", "_end"))
    turns["t_end"] = turns["t_ms_end"].fillna(turns["t_ms"] + turns["duration_ms"].fillna(0.0))
    turns = turns.sort_values(["ep", "t_ms"], kind="stable")
    turns["next_start"] = turns.groupby("ep")["t_ms"].shift(-1)
    return turns[["ep", "turn", "t_ms", "t_end", "next_start"]].rename(columns={"t_ms": "t_start"})


def _agent_turns(table: EventTable) -> pd.DataFrame:
    starts = table.of_type("agent_speech_start", columns=["ep", "turn", "t_ms"])
    ends = table.of_type("agent_speech_end", columns=["ep", "turn", "t_ms", "duration_ms"]).drop_duplicates(
        ["ep", "turn"], keep="last"
    )
    turns = starts.merge(ends, on=["ep", "turn"], how="left", suffixes=("", "_end"))
    turns["t_end"] = turns["t_ms_end"].fillna(turns["t_ms"] + turns["duration_ms"].fillna(0.0))
    return turns[["ep", "turn", "t_ms", "t_end"]].rename(columns={"t_ms": "t_start"})


def _asof(left: pd.DataFrame, lkey: str, right: pd.DataFrame, rkey: str, direction: str) -> pd.DataFrame:
    left = left.assign(_k=left[lkey].astype(np.int64)).sort_values("_k", kind="stable")
    right = right.assign(_k=right[rkey].astype(np.int64)).sort_values("_k", kind="stable")
    return pd.merge_asof(left, right, on="_k", by="ep", direction=direction, suffixes=("", "_r"))


def _answered(caller: pd.DataFrame, agent: pd.DataFrame) -> pd.DataFrame:
    """Each caller turn with the first agent speech that began after it started and before the
    caller's next utterance (turns nobody answered are dropped)."""
    m = _asof(
        caller,
        "t_start",
        agent[["ep", "t_start", "t_end"]].rename(columns={"t_start": "t_agent", "t_end": "t_agent_end"}),
        "t_agent",
        "forward",
    )
    return m[m["t_agent"].notna() & (m["next_start"].isna() | (m["t_agent"] < m["next_start"]))]


def response_windows(table: EventTable) -> pd.DataFrame:
    """Answered caller turns on the call clock, for measuring them on the recording: ep, turn,
    caller_start, caller_end (the clip's end), agent_start and agent_end (logged)."""
    m = _answered(_caller_turns(table), _agent_turns(table))
    return pd.DataFrame(
        {
            "ep": m["ep"].to_numpy(),
            "turn": m["turn"].to_numpy(),
            "caller_start": m["t_start"].to_numpy(dtype=float),
            "caller_end": m["t_end"].to_numpy(dtype=float),
            "agent_start": m["t_agent"].to_numpy(dtype=float),
            "agent_end": m["t_agent_end"].to_numpy(dtype=float),
        }
    )


def latency(table: EventTable, caller: pd.DataFrame, agent: pd.DataFrame) -> pd.DataFrame:
    m = _answered(caller, agent)
    lat = (m["t_agent"] - m["t_end"]).groupby(m["ep"])
    return pd.DataFrame(
        {
            "speech_latency_ms_mean": table.per_episode(lat.mean(), None),
            "speech_latency_ms_median": table.per_episode(lat.median(), None),
            "speech_latency_ms_max": table.per_episode(lat.max(), None),
            "speech_latency_n": table.per_episode(lat.size().astype(float)),
        }
    )


def overlap(table: EventTable, caller: pd.DataFrame, agent: pd.DataFrame) -> pd.Series:
    """Starts of one party strictly inside the other's speech interval."""
    a_in_c = _asof(
        agent[["ep", "t_start"]],
        "t_start",
        caller[["ep", "t_start", "t_end"]].rename(columns={"t_start": "cs", "t_end": "ce"}),
        "cs",
        "backward",
    )
    n1 = a_in_c[(a_in_c["t_start"] > a_in_c["cs"]) & (a_in_c["t_start"] < a_in_c["ce"])].groupby("ep").size()
    c_in_a = _asof(
        caller[["ep", "t_start"]],
        "t_start",
        agent[["ep", "t_start", "t_end"]].rename(columns={"t_start": "as_", "t_end": "ae"}),
        "as_",
        "backward",
    )
    n2 = c_in_a[(c_in_a["t_start"] > c_in_a["as_"]) & (c_in_a["t_start"] < c_in_a["ae"])].groupby("ep").size()
    return table.per_episode(n1.add(n2, fill_value=0).astype(float)).rename("speech_overlap_n")


def rate(table: EventTable) -> pd.DataFrame:
    words = table.of_type("agent_transcript", columns=["ep", "turn", "text"])
    counts = pd.Series(
        map_unique(words["text"], lambda t: len(t.split())), index=words.index, dtype="float64"
    )
    words = words.assign(n=counts).groupby(["ep", "turn"])["n"].sum()
    dur = (
        table.of_type("agent_speech_end", columns=["ep", "turn", "duration_ms"])
        .groupby(["ep", "turn"])["duration_ms"]
        .sum()
    )
    per = pd.concat([words.rename("w"), dur.rename("d")], axis=1, join="inner")
    per = per[(per["d"] > 0) & (per["w"] > 0)].reset_index()
    per["r"] = per["w"] / (per["d"] / 1000.0)
    g = per.groupby("ep")
    total = g["w"].sum() / (g["d"].sum() / 1000.0)
    per["pos"] = g.cumcount()
    per["half"] = per["pos"] >= g["pos"].transform("size") / 2.0
    halves = per.groupby(["ep", "half"])["r"].mean().unstack()
    shift = (halves[True] - halves[False]) if {True, False} <= set(halves.columns) else pd.Series(dtype=float)
    return pd.DataFrame(
        {
            "speech_rate_wps": table.per_episode(total, None),
            "speech_rate_shift_wps": table.per_episode(shift, None),
        }
    )


def extract(table: EventTable) -> pd.DataFrame:
    caller = _caller_turns(table)
    agent = _agent_turns(table)

    def count(rows: pd.DataFrame) -> pd.Series:
        return table.per_episode(rows.groupby("ep").size().astype(float))

    barge = table.of_type("barge_in")
    agent_end = table.of_type("agent_speech_end", columns=["ep", "interrupted"])
    caller_end = table.of_type("caller_utterance_end", columns=["ep", "truncated"])
    return pd.concat(
        [
            latency(table, caller, agent),
            overlap(table, caller, agent),
            count(agent_end[agent_end["interrupted"] == 1.0]).rename("speech_agent_interrupted_n"),
            count(caller_end[caller_end["truncated"] == 1.0]).rename("speech_caller_truncated_n"),
            count(barge[barge["by"] == "caller"]).rename("speech_barge_in_caller_n"),
            count(barge[barge["by"] == "agent"]).rename("speech_barge_in_agent_n"),
            rate(table),
            yielding(table),
        ],
        axis=1,
    )


def yielding(table: EventTable) -> pd.DataFrame:
    """How the agent reacted when the caller barged in (`agent_yield`, measured on the recording):
    time to stop talking, overlap, turns it talked through, and its own clears of queued audio.
    Missing (not zero) for calls without a caller barge-in."""
    y = table.of_type("agent_yield", columns=["ep", "stop_latency_ms", "overlap_ms", "cleared"])
    clears = table.of_type("agent_clear", columns=["ep"])
    g = y.groupby("ep")
    stopped = y[y["stop_latency_ms"].notna()].groupby("ep")["stop_latency_ms"]
    talked_through = y[y["stop_latency_ms"].isna()].groupby("ep").size().astype(float)
    any_barge = g.size().astype(float)
    out = pd.DataFrame(
        {
            "speech_agent_yield_ms_mean": table.per_episode(stopped.mean(), None),
            "speech_agent_yield_ms_max": table.per_episode(stopped.max(), None),
            "speech_agent_talked_through_n": table.per_episode(
                talked_through.reindex(any_barge.index, fill_value=0.0), None
            ),
            "speech_barge_overlap_ms_mean": table.per_episode(g["overlap_ms"].mean(), None),
            "speech_agent_clear_n": table.per_episode(clears.groupby("ep").size().astype(float)),
        }
    )
    return out
