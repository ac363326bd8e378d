"""The human part of the stimulus gate (docs/method/index.md section 8): raters understand both conditions.

Raters hear a caller turn and type what they heard (the rating app's ``intelligibility`` task).
Each transcript is scored against the turn's scripted words with ``voice_audit.harness.audio.wer`` (the
normaliser and word error count the automatic pre-screen uses), and pooled per condition:

    human WER(condition) = sum of word errors / sum of scripted words, over its raters and lines.

A cell (condition a vs condition b) passes when each condition's human WER is at most the plan's
``max_wer`` and |WER a - WER b| at most ``max_gap``; a condition with fewer than ``min_raters``
raters or ``min_words`` transcribed words is not evaluable, and without any transcripts the gate
is not evaluable, as perceptibility is. A condition listeners cannot follow, or follow much worse
than its partner, is a stimulus problem before it is an agent's: every outcome gap on it could be
the engine's. The thresholds are point rules on pooled counts (per rater and per voice WERs are in
the details), so a few raters can settle a clear case; docs/method/stimulus-gate-human.md gives
their reasons.

Transcripts are read with plain json, like the other label readers, so the analysis does not
depend on the rating app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.gates.base import GateInputs, GateResult, Verdict, gate_scope, worst
from voice_audit.analysis.gates.labels import read_turn_labels
from voice_audit.harness.audio.wer import normalise_words, word_errors

GATE = "stimulus_intelligibility"
COLUMNS = ["episode_id", "turn", "rater", "reference", "heard"]


def read_intelligibility_labels(run_dir: Path) -> tuple[pd.DataFrame, list[str]]:
    """Intelligibility lines of ratings/labels.jsonl (the last label of a rater for a turn wins)."""
    return read_turn_labels(
        run_dir,
        "intelligibility",
        COLUMNS,
        lambda rec: {"reference": str(rec["reference"]), "heard": str(rec["heard"])},
    )


def score(labels: pd.DataFrame) -> pd.DataFrame:
    """Per transcript: scripted words and word errors against them."""
    refs = [normalise_words(r) for r in labels["reference"]]
    hyps = [normalise_words(h) for h in labels["heard"]]
    return labels.assign(
        words=[len(r) for r in refs],
        errors=[word_errors(r, h) for r, h in zip(refs, hyps, strict=True)],
    )


def _wer(sub: pd.DataFrame) -> float | None:
    words = int(sub["words"].sum())
    return float(sub["errors"].sum() / words) if words else None


def condition_wer(
    scored: pd.DataFrame, min_raters: int, min_words: int, max_wer: float
) -> dict[str, dict[str, Any]]:
    """Per condition key: pooled human WER, raters, words, verdict, and per rater and voice WERs."""
    out: dict[str, dict[str, Any]] = {}
    for cond, sub in scored.groupby("condition_key", sort=True):
        wer = _wer(sub)
        raters = int(sub["rater"].nunique())
        words = int(sub["words"].sum())
        verdict: Verdict
        if raters < min_raters or words < min_words or wer is None:
            verdict = "not-evaluable"
        else:
            verdict = "pass" if wer <= max_wer else "fail"
        out[str(cond)] = {
            "wer": wer,
            "raters": raters,
            "words": words,
            "transcripts": len(sub),
            "verdict": verdict,
            "by_rater": {str(r): _wer(g) for r, g in sub.groupby("rater", sort=True)},
            "by_voice": {str(v): _wer(g) for v, g in sub.groupby("voice_id", sort=True)},
        }
    return out


def cell_verdict(
    a: dict[str, Any] | None, b: dict[str, Any] | None, max_gap: float
) -> tuple[Verdict, str, float | None]:
    """A cell's verdict from its two conditions, the reason, and the a - b gap."""
    if a is None or b is None:
        side = "a" if a is None else "b"
        return "not-evaluable", f"no transcripts of condition {side}", None
    gap = None if a["wer"] is None or b["wer"] is None else float(a["wer"] - b["wer"])
    verdict = worst([a["verdict"], b["verdict"]])
    reasons = [
        f"{side} WER {c['wer']:.3f} ({c['raters']} raters, {c['words']} words): {c['verdict']}"
        for side, c in (("a", a), ("b", b))
        if c["wer"] is not None
    ]
    if (
        gap is not None
        and a["verdict"] != "not-evaluable"
        and b["verdict"] != "not-evaluable"
        and abs(gap) > max_gap
    ):
        verdict = "fail"
        reasons.append(f"gap a - b {gap:+.3f} beyond {max_gap}")
    elif gap is not None:
        reasons.append(f"gap a - b {gap:+.3f}")
    return verdict, "; ".join(reasons), gap


def evaluate_intelligibility(
    labels: pd.DataFrame,
    episodes: pd.DataFrame,
    pairs: pd.DataFrame,
    *,
    min_raters: int,
    min_words: int,
    max_wer: float,
    max_gap: float,
) -> tuple[Verdict, str, dict[str, Any], pd.Series]:
    """(run verdict, evidence, details, verdict per pair) from transcripts (`read_intelligibility_labels`),
    the episodes (episode_id, condition_key, voice_id) and the pairs (pair_id, condition_key_a/_b)."""
    p = pairs.set_index("pair_id")
    if labels.empty:
        ev = "no intelligibility transcripts in ratings/labels.jsonl (voice-audit rate RUN --task intelligibility)"
        return "not-evaluable", ev, {}, pd.Series("not-evaluable", index=p.index, dtype=object)
    ep = episodes[["episode_id", "condition_key", "voice_id"]].drop_duplicates("episode_id")
    scored = score(labels.merge(ep, on="episode_id", how="inner"))
    conds = condition_wer(scored, min_raters, min_words, max_wer)
    cells: dict[str, dict[str, Any]] = {}
    for ka, kb in p[["condition_key_a", "condition_key_b"]].drop_duplicates().itertuples(index=False):
        v, why, gap = cell_verdict(conds.get(str(ka)), conds.get(str(kb)), max_gap)
        cells[f"{ka} vs {kb}"] = {"a": str(ka), "b": str(kb), "verdict": v, "gap": gap, "evidence": why}
    pair_v = pd.Series(
        [
            cells[f"{ka} vs {kb}"]["verdict"]
            for ka, kb in zip(p["condition_key_a"], p["condition_key_b"], strict=True)
        ],
        index=p.index,
        dtype=object,
    )
    verdict = worst(list(pair_v)) if len(pair_v) else "not-evaluable"
    evidence = "; ".join(f"[{k}] {c['verdict']}: {c['evidence']}" for k, c in cells.items())
    details = {
        "conditions": conds,
        "cells": cells,
        "transcripts": len(scored),
        "raters": int(scored["rater"].nunique()),
    }
    return verdict, evidence, details, pair_v


def stimulus_intelligibility(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    """Raters' transcripts of the caller's lines: each condition understood, and about equally."""
    th = inp.plan.gates.intelligibility
    labels, skipped = read_intelligibility_labels(inp.ing.run_dir)
    verdict, evidence, details, pair_v = evaluate_intelligibility(
        labels, inp.episodes, inp.pairs,
        min_raters=th.min_raters, min_words=th.min_words, max_wer=th.max_wer, max_gap=th.max_gap,
    )  # fmt: skip
    res = GateResult(
        gate=GATE,
        verdict=verdict,
        evidence=evidence,
        thresholds=th.model_dump(),
        scope=gate_scope(inp.plan, GATE),
        details=details,
        diagnostics={"skipped_labels": skipped} if skipped else {},
    )
    return res, pair_v.reindex(inp.pairs["pair_id"]).fillna("not-evaluable").astype(object)
