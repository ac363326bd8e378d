"""Gate 2: both calls of a pair held the same facts and were told the same things."""

from __future__ import annotations

import numpy as np
import pandas as pd

from voice_audit.analysis.gates.base import GateInputs, GateResult, gate_scope, worst


def fact_invariance(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    table = inp.ing.table
    prov = table.of_type("facts_provisioned")

    def one_hash(rows: pd.DataFrame) -> pd.Series:
        """The episode's provisioned hash; two different ones in one call count as a mismatch."""
        uniq = rows.drop_duplicates(["ep", "sha256"])
        first = uniq.groupby("ep")["sha256"].first()
        conflict = uniq.groupby("ep").size() > 1
        return first.where(~conflict, "conflicting:" + first.astype(str))

    sent = prov[(prov["reported_by_agent"] != 1.0) & prov["disclosed_sha256"].notna()]
    disclosed = table.per_episode(
        sent.drop_duplicates(["ep", "disclosed_sha256"])
        .groupby("ep")["disclosed_sha256"]
        .agg(lambda v: v.iat[0] if len(v) == 1 else "conflicting"),
        None,
    )
    harness = one_hash(prov[prov["reported_by_agent"] != 1.0])
    agent = one_hash(prov[prov["reported_by_agent"] == 1.0])
    h = table.per_episode(harness, None)
    a = table.per_episode(agent, None)
    ep = inp.episodes.set_index("episode_id", drop=False)
    p = inp.pairs.set_index("pair_id")
    ea, eb = p["episode_id_a"], p["episode_id_b"]
    known = ea.isin(h.index) & eb.isin(h.index)
    ha, hb = ea.map(h), eb.map(h)
    aa, ab = ea.map(a), eb.map(a)
    locked = ea.map(ep["facts_sha256"])
    checks = {
        "no facts_provisioned event": ha.isna() | hb.isna(),
        "provisioned facts differ between the two calls": ha.notna() & hb.notna() & (ha != hb),
        "provisioned facts differ from the locked scenario facts": ha.notna() & (ha == hb) & (ha != locked),
        "facts the agent reported seeing differ": aa.notna() & ab.notna() & ((aa != ab) | (aa != ha)),
        "what was sent to the agent differs between the two calls": ea.map(disclosed).notna()
        & eb.map(disclosed).notna()
        & (ea.map(disclosed) != eb.map(disclosed)),
        "tool availability differs": ea.map(ep["tool_available"]).fillna("")
        != eb.map(ep["tool_available"]).fillna(""),
    }
    agent_reported = int((aa.notna() & ab.notna()).sum())
    bad = pd.DataFrame(checks).fillna(False).astype(bool) & known.to_numpy()[:, None]
    any_bad = bad.any(axis=1)
    verdicts = pd.Series(
        np.where(~known, "not-evaluable", np.where(any_bad, "fail", "pass")), index=p.index, dtype=object
    )
    failures = {
        str(pid): "; ".join(c for c in bad.columns if row[c]) for pid, row in bad[any_bad].head(50).iterrows()
    }
    failures_n = int(any_bad.sum())
    s = verdicts
    verdict = worst(list(s.unique())) if len(s) else "not-evaluable"
    evidence = (
        f"{int((s == 'pass').sum())} of {len(s)} pairs: identical facts_provisioned sha256 on both calls, equal to the locked "
        f"facts, equal tool set, the same disclosure sent to the agent; agent-reported hashes compared on {agent_reported} pairs"
    )
    res = GateResult(
        gate="fact_invariance",
        verdict=verdict,
        evidence=evidence,
        thresholds={},
        scope=gate_scope(inp.plan, "fact_invariance"),
        details={"failing_pairs": failures, "n_failing": failures_n},
    )
    return res, s
