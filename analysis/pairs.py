"""Join the two calls of each matched pair and check tool-call parity (METHOD.md section 4).

Parity has four parts, each 0/1 (1 = violation) with the diff: availability (the tool set the
harness provisioned), sequence (call names in order), returned keys (per call, in order) and
success states. Sequence, keys and success need a tool trace and are missing without one;
availability is always known. A violation counts even when both calls ended the same way.

A pair enters the deltas only when both sides exist, completed, and have a readable event log;
every other pair stays in the table with `exclusion_reason`, so nothing is dropped silently.
"""

from __future__ import annotations

import difflib
import json

import numpy as np
import pandas as pd

PAIR_LEVEL: tuple[str, ...] = ("scenario_id", "agent", "architecture", "run_batch", "contrast", "replicate")


def _split(value: object, sep: str) -> list[str]:
    return [v for v in value.split(sep) if v] if isinstance(value, str) else []


def sequence_diff(a: object, b: object) -> list[str]:
    """Extra, missing and substituted calls of b relative to a, by position."""
    sa, sb = _split(a, ">"), _split(b, ">")
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=sa, b=sb, autojunk=False).get_opcodes():
        if op == "delete":
            out.append(f"only in a at {i1}: {'>'.join(sa[i1:i2])}")
        elif op == "insert":
            out.append(f"only in b at {j1}: {'>'.join(sb[j1:j2])}")
        elif op == "replace":
            out.append(f"a {'>'.join(sa[i1:i2])} vs b {'>'.join(sb[j1:j2])} at {i1}")
    return out


def positional_diff(a: object, b: object) -> list[str]:
    """Per-call differences of 'name:value' lists (returned keys or success states)."""
    la, lb = _split(a, ";"), _split(b, ";")
    out = [f"call {i}: a {x} vs b {y}" for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y]
    if len(la) != len(lb):
        out.append(f"a has {len(la)} results, b has {len(lb)}")
    return out


def build_pairs(episodes: pd.DataFrame) -> pd.DataFrame:
    """One row per pair_id (episodes: the ingest frame joined with the metrics, index episode_id)."""
    cols = [
        "episode_id",
        "status",
        "analysable",
        "condition_key",
        "voice_id",
        "outcome_terminal",
        "tool_trace_exposed",
        "tool_available",
        "tool_sequence",
        "tool_result_keys",
        "tool_success",
    ]
    sides = {
        s: episodes[episodes["side"] == s].drop_duplicates("pair_id", keep="last").set_index("pair_id")
        for s in ("a", "b")
    }
    ids = sides["a"].index.union(sides["b"].index)
    level = pd.concat([sides["a"], sides["b"]])
    level = level[~level.index.duplicated()][list(PAIR_LEVEL)].reindex(ids)
    out = level.copy()
    for s in ("a", "b"):
        part = sides[s].reindex(ids)[cols]
        part.columns = [f"{c}_{s}" for c in cols]
        out = out.join(part)
    has_a, has_b = out["episode_id_a"].notna(), out["episode_id_b"].notna()
    done = (out["status_a"] == "completed") & (out["status_b"] == "completed")
    readable = (out["analysable_a"] == True) & (out["analysable_b"] == True)  # noqa: E712 - object column with NaN
    reason = np.select(
        [~has_a, ~has_b, ~done, ~readable],
        [
            "missing partner: side a",
            "missing partner: side b",
            "a side did not complete (failed/cancelled)",
            "a side has no readable event log",
        ],
        "",
    )
    out["included"] = reason == ""
    out["exclusion_reason"] = pd.Series(reason, index=out.index).replace("", None)
    out["outcome_equal"] = np.where(
        out["included"], (out["outcome_terminal_a"] == out["outcome_terminal_b"]).astype(float), np.nan
    )
    trace = (out["tool_trace_exposed_a"] == 1.0) | (out["tool_trace_exposed_b"] == 1.0)
    evaluable = out["included"]
    out["parity_availability"] = np.where(
        evaluable,
        (out["tool_available_a"].fillna("") != out["tool_available_b"].fillna("")).astype(float),
        np.nan,
    )
    for part in ("sequence", "result_keys", "success"):
        a = out[f"tool_{part}_a"].fillna("")
        b = out[f"tool_{part}_b"].fillna("")
        out[f"parity_{part}"] = np.where(evaluable & trace, (a != b).astype(float), np.nan)
    parts = ["parity_availability", "parity_sequence", "parity_result_keys", "parity_success"]
    out["parity_violation"] = out[parts].max(axis=1, skipna=True).where(evaluable)
    diffs: list[str | None] = []
    for row in out.itertuples():
        if row.parity_violation != 1.0:
            diffs.append(None)
            continue
        d: dict[str, object] = {}
        if row.parity_availability == 1.0:
            sa, sb = set(_split(row.tool_available_a, ",")), set(_split(row.tool_available_b, ","))
            d["availability"] = {"only_a": sorted(sa - sb), "only_b": sorted(sb - sa)}
        if row.parity_sequence == 1.0:
            d["sequence"] = sequence_diff(row.tool_sequence_a, row.tool_sequence_b)
        if row.parity_result_keys == 1.0:
            d["result_keys"] = positional_diff(row.tool_result_keys_a, row.tool_result_keys_b)
        if row.parity_success == 1.0:
            d["success"] = positional_diff(row.tool_success_a, row.tool_success_b)
        diffs.append(json.dumps(d, sort_keys=True))
    out["parity_diff"] = diffs
    out.index.name = "pair_id"
    return out.reset_index()
