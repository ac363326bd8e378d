"""Gate 1: every scenario a run used is the locked one, and the lock file is intact."""

from __future__ import annotations

from typing import Any

import pandas as pd

from voice_audit.analysis.gates.base import GateInputs, GateResult, gate_scope, pairwise, worst
from voice_audit.scenarios.errors import VoiceAuditError


def scenario_lock(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    man = inp.ing.manifest
    ep = inp.episodes
    per_scenario: dict[str, dict[str, Any]] = {}
    lock = None
    lock_problem = None
    if inp.library is not None:
        try:
            lock = inp.library.read_lock()
        except VoiceAuditError as exc:
            lock_problem = str(exc)
    for sid, run_hash in sorted(man.scenario_hashes.items()):
        checks: dict[str, Any] = {"run_sha256": run_hash}
        sc = inp.scenarios.get(sid)
        sub = ep[ep["scenario_id"] == sid]
        checks["episodes_match_run"] = bool((sub["scenario_sha256"] == run_hash).all())
        checks["facts_match_run"] = bool((sub["facts_sha256"] == man.facts_hashes.get(sid)).all())
        if sc is None or inp.library is None:
            checks["verdict"] = "not-evaluable"
            checks["why"] = "scenario file not found now; cannot verify it is unchanged after collection"
        else:
            entry = lock.scenarios.get(sid) if lock else None
            checks["file_sha256_now"] = sc.sha256
            checks["lock_sha256"] = entry.sha256 if entry else None
            ok = sc.sha256 == run_hash and entry is not None and entry.sha256 == run_hash
            ok = ok and checks["episodes_match_run"] and checks["facts_match_run"]
            checks["verdict"] = "pass" if ok else "fail"
            if not ok:
                checks["why"] = (
                    lock_problem or "hash of the file now, the lock or an episode differs from run.json"
                )
        per_scenario[sid] = checks
    ep_verdict = ep["scenario_id"].map(lambda s: per_scenario.get(str(s), {}).get("verdict", "fail"))
    ep_verdict.index = ep["episode_id"]
    verdict = worst([c["verdict"] for c in per_scenario.values()]) if per_scenario else "not-evaluable"
    bad = {s: c.get("why") for s, c in per_scenario.items() if c["verdict"] != "pass"}
    evidence = (
        f"{len(per_scenario)} scenario(s): hash in run.json = file now = lock file = every episode header"
        + (f"; problems: {bad}" if bad else "")
    )
    res = GateResult(
        gate="scenario_lock",
        verdict=verdict,
        evidence=evidence,
        thresholds={},
        scope=gate_scope(inp.plan, "scenario_lock"),
        details={"scenarios": per_scenario},
    )
    return res, pairwise(inp, ep_verdict)
