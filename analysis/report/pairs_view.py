"""Which matched pairs the report shows side by side, and the two calls of each.

Only the shown pairs' event logs are read and only their recordings are copied; the rest of the
run is summarised from pairs.parquet and metrics.parquet. Pairs that matter most come first:
tool-parity violations, different outcomes, failed or partnerless pairs, then the largest
path-burden differences.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.report import timeline
from voice_audit.analysis.report.loader import RunOutputs
from voice_audit.analysis.report.model import CallView, PairView
from voice_audit.analysis.report.redact import TEXT_MASK, is_real_system
from voice_audit.harness.model.failures import NON_SERVICE_FLAGS
from voice_audit.scenarios.errors import VoiceAuditError

BURDEN = ("burden_repair", "burden_auth", "burden_esc_s")
SELECTION_RULE = (
    "pairs named with --pair first, then tool-parity violations, different terminal outcomes, "
    "pairs with a failed or missing call, then the largest path-burden difference |ΔRepair|+|ΔAuth|+|ΔEsc|"
)


@dataclass
class PairsBuilt:
    views: list[PairView]
    audio: dict[str, Path] = field(default_factory=dict)  # report-relative path -> source wav


def _f(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _s(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def not_served_flag(flags: object) -> str | None:
    """The non-service flag among a call's comma-joined outcome flags (None: the agent served it)."""
    if not isinstance(flags, str):
        return None
    return next((f for f in flags.split(",") if f in NON_SERVICE_FLAGS), None)


def select(
    pairs: pd.DataFrame, metrics: pd.DataFrame, max_pairs: int, wanted: Sequence[str]
) -> list[tuple[str, str]]:
    """(pair_id, why) in display order, at most max_pairs plus the explicitly wanted ones."""
    if pairs.empty:
        return []
    ep = metrics.set_index("episode_id")
    burden = ep[[c for c in BURDEN if c in ep.columns]].fillna(0.0).sum(axis=1)
    p = pairs.set_index("pair_id")
    diff = (p["episode_id_a"].map(burden) - p["episode_id_b"].map(burden)).abs().fillna(0.0)
    reasons = pd.Series("", index=p.index, dtype=object)
    rank = pd.Series(5, index=p.index)
    flags = (
        ep["outcome_flags"]
        if "outcome_flags" in ep.columns
        else pd.Series(None, index=ep.index, dtype=object)
    )
    unserved = flags.map(not_served_flag).notna()
    side_a = p["episode_id_a"].map(unserved).fillna(False).astype(bool)
    not_served = side_a | p["episode_id_b"].map(unserved).fillna(False).astype(bool)
    for level, mask, why in (  # later rows win: the most telling reason is last
        (3, ~p["included"].astype(bool), "a call failed or is missing"),
        (2, p["outcome_equal"] == 0.0, "terminal outcomes differ"),
        (1, p["parity_violation"] == 1.0, "tool-parity violation"),
        (0, not_served, "the agent did not serve a call"),
    ):
        rank[mask] = level
        reasons[mask] = why
    rank[(rank == 5) & (diff > 0)] = 4
    reasons[(rank == 4)] = "path-burden difference"
    reasons[reasons == ""] = "example pair"
    order = pd.DataFrame({"rank": rank, "diff": -diff, "pid": p.index}).sort_values(["rank", "diff", "pid"])
    chosen = [(str(w), "named with --pair") for w in wanted if w in p.index]
    seen = {c for c, _ in chosen}
    limit = len(chosen) + max(0, max_pairs)
    for pid in order["pid"]:
        if len(chosen) >= limit:
            break
        if pid not in seen:
            chosen.append((str(pid), str(reasons[pid])))
            seen.add(pid)
    return chosen


def _call(out: RunOutputs, ep: pd.Series, side: str, redact: bool, audio: dict[str, Path]) -> CallView:
    eid = str(ep["episode_id"])
    real = is_real_system(str(ep["adapter"]))
    keep_text = not (redact and real)
    try:
        events = out.reader.events(eid)
    except (OSError, VoiceAuditError):
        events = []
    tl = timeline.build(events, keep_agent_text=keep_text, duration_ms=int(ep.get("duration_ms") or 0))
    rel: str | None = None
    src = _s(ep.get("audio_file"))
    if not redact and src and (out.run_dir / src).is_file():
        rel = f"audio/{eid}.wav"
        audio[rel] = out.run_dir / src
    termination = str(ep.get("termination") or "")
    if not keep_text and ep.get("status") != "completed":
        termination = TEXT_MASK
    return CallView(
        episode_id=eid,
        side="a" if side == "a" else "b",
        condition_key=str(ep.get("condition_key") or ""),
        voice_id=str(ep.get("voice_id") or ""),
        status=str(ep.get("status")),
        failure_kind=_s(ep.get("failure_kind")),
        not_served=not_served_flag(ep.get("outcome_flags")),
        termination=termination,
        outcome=_s(ep.get("outcome_terminal")),
        duration_ms=max(int(ep.get("duration_ms") or 0), tl.end_ms),
        audio=rel,
        burden={c: _f(ep.get(c)) for c in BURDEN},
        tool_sequence=_s(ep.get("tool_sequence")),
        timeline=tl.items,
        transcript=tl.transcript,
        text_redacted=not keep_text,
    )


def build(out: RunOutputs, max_pairs: int, wanted: Sequence[str], redact: bool) -> PairsBuilt:
    chosen = select(out.pairs, out.metrics, max_pairs, wanted)
    p = out.pairs.set_index("pair_id")
    ep = out.metrics.set_index("episode_id", drop=False)
    built = PairsBuilt(views=[])
    for pid, why in chosen:
        row = p.loc[pid]
        calls: dict[str, CallView | None] = {}
        for side in ("a", "b"):
            eid = row[f"episode_id_{side}"]
            calls[side] = (
                _call(out, ep.loc[eid], side, redact, built.audio)
                if isinstance(eid, str) and eid in ep.index
                else None
            )
        raw_diff = row.get("parity_diff")
        built.views.append(
            PairView(
                pair_id=str(pid),
                agent=str(row["agent"]),
                scenario_id=str(row["scenario_id"]),
                contrast=str(row["contrast"] or ""),
                replicate=int(row["replicate"]),
                why_shown=why,
                included=bool(row["included"]),
                exclusion_reason=_s(row.get("exclusion_reason")),
                outcome_equal=_f(row.get("outcome_equal")),
                parity_violation=_f(row.get("parity_violation")),
                parity_parts={
                    k: _f(row.get(f"parity_{k}"))
                    for k in ("availability", "sequence", "result_keys", "success")
                },
                parity_diff=json.loads(raw_diff) if isinstance(raw_diff, str) else None,
                claim=_s(row.get("claim")),
                claim_drivers=_s(row.get("claim_drivers")),
                a=calls["a"],
                b=calls["b"],
            )
        )
    return built
