"""The call accounting of a report: per agent the calls made, served, failed and acceptable, and the
calls that did not end in service (harness failures are missing data, agent non-service an outcome)."""

from __future__ import annotations

import pandas as pd

from voice_audit.analysis.report import pairs_view
from voice_audit.analysis.report.model import CallCounts, FailedCall
from voice_audit.analysis.report.redact import TEXT_MASK, is_real_system

MAX_FAILED_LISTED = 500


def not_served(metrics: pd.DataFrame) -> pd.Series:
    """The non-service flag of each call the agent did not serve (None otherwise)."""
    flags = (
        metrics["outcome_flags"]
        if "outcome_flags" in metrics.columns
        else pd.Series(None, index=metrics.index)
    )
    return flags.map(pairs_view.not_served_flag)


def failed_mask(metrics: pd.DataFrame) -> pd.Series:
    """Calls that did not end in service: harness-side failures and cancellations (missing data), and
    completed calls the agent did not serve (an outcome, never a pass)."""
    status = metrics["status"].astype(str)
    return (status != "completed") | not_served(metrics).notna() | metrics["failure_kind"].notna()


def calls(metrics: pd.DataFrame) -> tuple[list[CallCounts], list[FailedCall]]:
    """Per agent; a call passes only when the agent served it to an acceptable outcome."""
    counts: list[CallCounts] = []
    bad_all = failed_mask(metrics)
    flag_all = not_served(metrics)
    for agent, sub in metrics.groupby("agent", sort=True):
        status = sub["status"].astype(str)
        bad = bad_all.loc[sub.index]
        flag = flag_all.loc[sub.index]
        served_not = (status == "completed") & bad
        passed = ~bad & (sub["outcome_acceptable"] == 1.0)
        kinds = sub.loc[bad, "failure_kind"].dropna().astype(str).value_counts()
        counts.append(
            CallCounts(
                agent=str(agent),
                records=len(sub),
                completed=int((status == "completed").sum()),
                not_served=int(served_not.sum()),
                failed=int((status == "failed").sum()),
                cancelled=int((status == "cancelled").sum()),
                failure_kinds={str(k): int(v) for k, v in kinds.items()},
                not_served_reasons={
                    str(k): int(v)
                    for k, v in flag[served_not].fillna("agent_error_event").value_counts().items()
                },
                acceptable=int(passed.sum()),
                acceptable_rate=float(passed.sum()) / len(sub) if len(sub) else None,
            )
        )
    bad = metrics[bad_all].sort_values(["agent", "pair_id", "side"])
    flags = flag_all.loc[bad.index]
    failed = [
        FailedCall(
            episode_id=str(r.episode_id),
            pair_id=str(r.pair_id),
            agent=str(r.agent),
            side=str(r.side),
            status="not served" if str(r.status) == "completed" else str(r.status),
            failure_kind=r.failure_kind
            if isinstance(r.failure_kind, str)
            else (f if isinstance(f, str) else None),
            termination=str(r.termination or ""),
        )
        for r, f in zip(bad.head(MAX_FAILED_LISTED).itertuples(), flags.head(MAX_FAILED_LISTED), strict=True)
    ]
    return counts, failed


def mask_real_terminations(failed: list[FailedCall], metrics: pd.DataFrame) -> list[FailedCall]:
    real = {
        str(e)
        for e, a in zip(metrics["episode_id"], metrics["adapter"], strict=True)
        if is_real_system(str(a))
    }
    return [f.model_copy(update={"termination": TEXT_MASK}) if f.episode_id in real else f for f in failed]
