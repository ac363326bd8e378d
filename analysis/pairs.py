"""Join the two calls of each matched pair and check tool-call parity (docs/method/index.md section 4).

Parity has four parts, each 0/1 (1 = violation) with the diff: availability (the tool set the
harness provisioned), sequence (call names in order), returned keys and success states. Keys and
success states are compared call by call along the alignment of the two call-name sequences
(difflib), so an extra or missing call is reported once, as such, and the matched calls around it
are still compared pairwise. Sequence, keys and success need a tool trace and are missing without one;
availability is always known. A violation counts even when both calls ended the same way.

A pair enters the deltas only when both sides exist, completed, and have a readable event log;
every other pair stays in the table with `exclusion_reason`, so nothing is dropped silently.
`upgraded_from_schema_a/_b` name a side whose older record was read as the current schema writes
it (a version 1 call the agent did not serve, now the outcome it is).
"""

from __future__ import annotations

import difflib
import json
from functools import lru_cache

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


def _name_value(item: str) -> tuple[str, str]:
    name, _, value = item.partition(":")
    return name, value


@lru_cache(maxsize=65536)
def aligned_diff(a: str, b: str, sequences_equal: bool) -> tuple[bool, tuple[str, ...]]:
    """Per-call differences of 'name:value' lists (returned keys or success states), the calls
    aligned by name along the sequence alignment (difflib), not by position.

    Matched calls are compared pairwise; an extra or missing call is reported once as such
    ('only in a/b'), so one extra call at the start does not make every later call differ.
    Returns (violation, diff lines). Unmatched results are a violation of this part only when the
    call sequences are equal (otherwise the sequence part already reports the extra call)."""
    la, lb = _split(a, ";"), _split(b, ";")
    na, nb = [_name_value(x)[0] for x in la], [_name_value(x)[0] for x in lb]
    out: list[str] = []
    mismatch = False
    unmatched = False
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=na, b=nb, autojunk=False).get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if la[i] != lb[j]:
                    mismatch = True
                    where = f"call {i}" if i == j else f"call a{i}/b{j}"
                    out.append(f"{where}: a {la[i]} vs b {lb[j]}")
            continue
        unmatched = True
        if i2 > i1:
            out.append(f"only in a at {i1}: {';'.join(la[i1:i2])}")
        if j2 > j1:
            out.append(f"only in b at {j1}: {';'.join(lb[j1:j2])}")
    return mismatch or (unmatched and sequences_equal), tuple(out)


def _side_status(out: pd.DataFrame, s: str) -> pd.Series:
    kind = out[f"failure_kind_{s}"].fillna("").astype(str)
    status = out[f"status_{s}"].fillna("missing").astype(str)
    return "condition " + s + " did not complete (" + status + np.where(kind != "", ": " + kind, "") + ")"


def _not_completed(out: pd.DataFrame) -> np.ndarray:
    """Names the side (and its failure kind) that kept the pair out, both when both failed."""
    a_bad = (out["status_a"] != "completed").to_numpy()
    b_bad = (out["status_b"] != "completed").to_numpy()
    sa, sb = _side_status(out, "a").to_numpy(), _side_status(out, "b").to_numpy()
    both = sa.astype(object) + "; " + sb.astype(object)
    return np.where(a_bad & b_bad, both, np.where(a_bad, sa, sb)).astype(object)


def _unreadable(out: pd.DataFrame) -> np.ndarray:
    a_bad = (out["analysable_a"] != True).to_numpy()  # noqa: E712 - object column with NaN
    names = np.where(a_bad, "condition a", "condition b")
    return (names.astype(object) + " has no readable event log").astype(object)


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
        "failure_kind",
        "upgraded_from_schema",
    ]
    if "failure_kind" not in episodes.columns:  # frames built before failure kinds were recorded
        episodes = episodes.assign(failure_kind=None)
    if "upgraded_from_schema" not in episodes.columns:  # frames not read from a run folder
        episodes = episodes.assign(upgraded_from_schema=pd.array([None] * len(episodes), dtype="Int64"))
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
        ["missing partner: side a", "missing partner: side b", _not_completed(out), _unreadable(out)],
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
    seq_a, seq_b = out["tool_sequence_a"].fillna(""), out["tool_sequence_b"].fillna("")
    seq_equal = (seq_a == seq_b).to_numpy()
    out["parity_sequence"] = np.where(evaluable & trace, (~seq_equal).astype(float), np.nan)
    aligned: dict[str, list[tuple[str, ...] | None]] = {}
    for part in ("result_keys", "success"):
        a = out[f"tool_{part}_a"].fillna("").astype(str).to_numpy()
        b = out[f"tool_{part}_b"].fillna("").astype(str).to_numpy()
        flag = np.zeros(len(out), dtype=float)
        found: list[tuple[str, ...] | None] = [None] * len(out)
        for i in np.flatnonzero(a != b):  # equal strings need no alignment
            bad, lines = aligned_diff(a[i], b[i], bool(seq_equal[i]))
            flag[i] = float(bad)
            found[i] = lines
        out[f"parity_{part}"] = np.where(evaluable & trace, flag, np.nan)
        aligned[part] = found
    parts = ["parity_availability", "parity_sequence", "parity_result_keys", "parity_success"]
    out["parity_violation"] = out[parts].max(axis=1, skipna=True).where(evaluable)
    diffs: list[str | None] = []
    for k, row in enumerate(out.itertuples()):
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
            d["result_keys"] = list(aligned["result_keys"][k] or ())
        if row.parity_success == 1.0:
            d["success"] = list(aligned["success"][k] or ())
        diffs.append(json.dumps(d, sort_keys=True))
    out["parity_diff"] = diffs
    out.index.name = "pair_id"
    return out.reset_index()
