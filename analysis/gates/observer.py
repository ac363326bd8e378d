"""The observer-validity gate (METHOD section 8): the caller's reading agrees with blind raters."""

from __future__ import annotations

import pandas as pd

from voice_audit.analysis.gates import observer_evidence as observer_gate
from voice_audit.analysis.gates.base import GateInputs, GateResult, gate_scope


def observer_validity(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    """The caller's readings against blind raters (`analysis.observer_gate`); reader agreement and
    the caller's ASR word error rate as diagnostics."""
    th = inp.plan.gates.observer
    data = observer_gate.observer_inputs(inp.ing.table, inp.episodes.set_index("episode_id")["agent"])
    ratings, _ = observer_gate.read_observer_labels(inp.ing.run_dir)
    diagnostics = {
        "reader_agreement": observer_gate.reader_agreement(data.readings, data.other),
        "caller_asr": observer_gate.asr_word_error(data.agent_words, data.asr_heard),
        "turns_to_label": observer_gate.turns_to_label(data.to_label),
    }
    v = observer_gate.evaluate_observer(
        data.readings, ratings, inp.pairs, kappa_min=th.kappa, min_turns=th.min_turns,
        min_raters=th.min_raters, alpha=inp.plan.alpha, diagnostics=diagnostics, reader=data.reader,
        metrics_reader=data.metrics_reader,
    )  # fmt: skip
    res = GateResult(
        gate="observer_validity",
        verdict=v.verdict,
        evidence=v.evidence,
        thresholds=v.thresholds,
        scope=gate_scope(inp.plan, "observer_validity"),
        details=v.details,
        diagnostics=v.diagnostics,
    )
    return res, v.by_pair.reindex(inp.pairs["pair_id"]).fillna("not-evaluable").astype(object)
