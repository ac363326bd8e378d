"""The observer-validity gate (docs/method/index.md section 8): is the caller's reading of the agent a valid instrument?

Blind raters label sampled agent turns ("what did the agent do in this turn?", the `observer`
task of the rating app). The caller's logged reading of each rated turn (`caller_decision`) is
compared with the raters' majority:

* overall, Cohen's kappa between the caller's act and the majority act must reach the plan's
  threshold on at least the plan's number of turns;
* per cell, the caller's misreading rate (act differs, or a challenge read with other facts) must
  not differ between conditions a and b: an exact sign-flip test over the cell's pairs, on the
  difference of the two calls' misreading rates. A differential observer error fails the cell,
  because it would manufacture a disparity in the very counts the audit compares.

The readers validated are the ones the metrics rest on: the acting reader of the calls
(`caller_decision`; named by `caller_reading.acting_reader` when a second reader ran, the rule
reader otherwise), reported as `details.reader`, whose primary act the burden counts follow; and
the metrics reader of the two reading-based safety events (`details.metrics_reader`: the acting
reader's acts joined with the turn model's, `voice_audit.analysis.metrics.safety.reread`, or the
acting reader alone). Beside kappa, the details give the recall and false-positive rate, against
the raters' majority, of the two acts those events rest on (`denial` for refused service,
`repair_request` for the repair loop), as the metrics reader read them; the turns on which the
caller's reading and the turn model disagreed are listed as the turns to rate first
(`diagnostics.turns_to_label`).

No ratings: not-evaluable, as for the other human gates. Diagnostics that need no raters are
reported beside the verdict: agreement between the two readers (`caller_reading`), and the word
error rate of the caller's ASR on turns whose words the agent gave (`asr_check`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from voice_audit.analysis.agreement import cohen_kappa
from voice_audit.analysis.gates.labels import read_turn_labels
from voice_audit.analysis.metrics import safety
from voice_audit.harness.audio.wer import normalise_words, word_errors

Verdict = Literal["pass", "fail", "not-evaluable"]
EXACT_MAX_PAIRS = 16
RATING_COLUMNS = ["episode_id", "turn", "rater", "act", "facts"]
READING_COLUMNS = ["episode_id", "turn", "classification", "challenge_fact"]


@dataclass
class ObserverVerdict:
    verdict: Verdict
    evidence: str
    details: dict[str, Any]
    diagnostics: dict[str, Any]
    by_pair: pd.Series
    thresholds: dict[str, Any] = field(default_factory=dict)


def read_observer_labels(run_dir: Path) -> tuple[pd.DataFrame, list[str]]:
    """Observer-task lines of ratings/labels.jsonl: episode_id, turn, rater, act, facts (sorted, comma-joined)."""
    return read_turn_labels(
        run_dir,
        "observer",
        RATING_COLUMNS,
        lambda rec: {
            "act": str(rec["act"]),
            "facts": ",".join(sorted(str(f) for f in rec.get("facts") or ())),
        },
    )


def majority(ratings: pd.DataFrame, min_raters: int) -> pd.DataFrame:
    """Per rated turn the majority act (ties and turns with too few raters have none) and, for a
    challenge, the majority fact set among the raters who chose it."""
    out: list[dict[str, Any]] = []
    for (eid, turn), sub in ratings.groupby(["episode_id", "turn"], sort=True):
        n = sub["rater"].nunique()
        counts = sub["act"].value_counts()
        top = counts[counts == counts.max()]
        act = str(top.index[0]) if n >= min_raters and len(top) == 1 else None
        facts = None
        if act == "challenge":
            fc = sub.loc[sub["act"] == "challenge", "facts"].value_counts()
            ftop = fc[fc == fc.max()]
            facts = str(ftop.index[0]) if len(ftop) == 1 else None
        out.append(
            {
                "episode_id": eid,
                "turn": int(turn),
                "raters": int(n),
                "majority_act": act,
                "majority_facts": facts,
            }
        )
    return pd.DataFrame(out, columns=["episode_id", "turn", "raters", "majority_act", "majority_facts"])


def _facts(value: object) -> str:
    if not isinstance(value, str) or not value:
        return ""
    return ",".join(sorted(f for f in value.split(",") if f))


def compare(readings: pd.DataFrame, ratings: pd.DataFrame, min_raters: int) -> pd.DataFrame:
    """Rated turns with a majority, beside the caller's reading; `misread` marks a disagreement."""
    maj = majority(ratings, min_raters)
    maj = maj[maj["majority_act"].notna()]
    r = readings.drop_duplicates(["episode_id", "turn"], keep="last")
    m = maj.merge(r, on=["episode_id", "turn"], how="inner")
    fact_miss = (
        (m["majority_act"] == "challenge")
        & (m["classification"] == "challenge")
        & m["majority_facts"].notna()
        & (m["challenge_fact"].map(_facts) != m["majority_facts"].map(_facts))
    )
    m["misread"] = (m["classification"] != m["majority_act"]) | fact_miss
    return m


def exact_signflip_p(diff: np.ndarray) -> float:
    """Two-sided p of the paired mean difference under random sign flips: exact over every sign
    pattern for up to EXACT_MAX_PAIRS non-zero pairs, else the normal limit."""
    d = diff[diff != 0]
    if len(d) == 0:
        return 1.0
    observed = abs(d.sum())
    if len(d) <= EXACT_MAX_PAIRS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
        sums = np.abs(signs @ d)
        return float(np.mean(sums >= observed - 1e-12))
    from scipy.stats import norm

    z = observed / np.sqrt(np.sum(d**2))
    return float(2 * norm.sf(z))


def _cell_of(pairs: pd.DataFrame) -> pd.Series:
    keys = [
        k for k in ("agent", "scenario_id", "contrast", "condition_key_a", "condition_key_b") if k in pairs
    ]
    return pairs[keys].astype(str).agg(" / ".join, axis=1)


def differential(compared: pd.DataFrame, pairs: pd.DataFrame, alpha: float) -> dict[str, dict[str, Any]]:
    """Per cell: misreading rates on the a and b calls and the paired sign-flip test between them."""
    rate = compared.groupby("episode_id")["misread"].mean()
    p = pairs.assign(cell=_cell_of(pairs).to_numpy())
    p["rate_a"] = p["episode_id_a"].map(rate)
    p["rate_b"] = p["episode_id_b"].map(rate)
    cells: dict[str, dict[str, Any]] = {}
    for cell, sub in p.groupby("cell", sort=True):
        both = sub.dropna(subset=["rate_a", "rate_b"])
        if both.empty:
            cells[str(cell)] = {
                "verdict": "not-evaluable",
                "why": "no pair with rated turns on both calls",
                "pairs": 0,
            }
            continue
        diff = (both["rate_a"] - both["rate_b"]).to_numpy(dtype=float)
        pval = exact_signflip_p(diff)
        cells[str(cell)] = {
            "verdict": "fail" if pval < alpha else "pass",
            "pairs": len(both),
            "misread_a": float(both["rate_a"].mean()),
            "misread_b": float(both["rate_b"].mean()),
            "p": pval,
            "test": "paired sign-flip on per-pair misreading rate a - b",
        }
    return cells


SAFETY_ACTS = ("denial", "repair_request")


def act_figures(compared: pd.DataFrame, act: str) -> dict[str, Any]:
    """Recall of `act` (rated turns whose majority act it is, read with it) and its false-positive
    rate (other rated turns read with it), over the metrics reader's acts of the compared turns
    (`metrics_acts`, comma-joined) or, without them, the primary act."""
    rated = compared["majority_act"] == act
    if "metrics_acts" in compared:
        read = compared["metrics_acts"].fillna("").astype(str).map(lambda a: act in a.split(","))
    else:
        read = compared["classification"] == act
    pos, neg = int(rated.sum()), int((~rated).sum())
    return {
        "rated": pos,
        "recall": float((rated & read).sum() / pos) if pos else None,
        "others": neg,
        "false_positive_rate": float((~rated & read).sum() / neg) if neg else None,
    }


def acting_reader(other: pd.DataFrame) -> str:
    """The reader whose readings the caller acted on (and the metrics rest on)."""
    if "acting_reader" in other and other["acting_reader"].notna().any():
        names = sorted(set(other["acting_reader"].dropna().astype(str)))
        return ",".join(names)
    return "rules"


def reader_agreement(acting: pd.DataFrame, other: pd.DataFrame) -> dict[str, Any]:
    """Diagnostic: the acting reader against the second reader on the same turns."""
    if other.empty:
        return {"turns": 0, "note": "no second reader ran (campaign reader.model not set)"}
    read = other[other["classification"].notna()]
    m = acting.drop_duplicates(["episode_id", "turn"]).merge(
        read.drop_duplicates(["episode_id", "turn"]), on=["episode_id", "turn"], suffixes=("", "_other")
    )
    if m.empty:
        return {"turns": 0, "failed": int(other["classification"].isna().sum())}
    k = cohen_kappa(m["classification"], m["classification_other"])
    dis = m[m["classification"] != m["classification_other"]]
    top = dis.groupby(["classification", "classification_other"]).size().sort_values(ascending=False).head(10)
    return {
        "turns": len(m),
        "failed": int(other["classification"].isna().sum()),
        "agreement": float((m["classification"] == m["classification_other"]).mean()),
        "kappa": k.value,
        "disagreements": [{"acting": a, "other": b, "turns": int(n)} for (a, b), n in top.items()],
    }


def asr_word_error(reference: pd.DataFrame, heard: pd.DataFrame) -> dict[str, Any]:
    """Diagnostic: the caller's ASR (`asr_check`) against the words the agent itself gave, per run
    and per agent: total word errors over total reference words."""
    if heard.empty:
        return {"turns": 0, "note": "the caller's ASR was not measured (campaign reader.measure_asr off)"}
    m = reference.merge(heard, on=["episode_id", "turn"], suffixes=("_ref", "_asr"))
    rows = []
    for ref, hyp, agent in zip(m["text_ref"], m["text_asr"], m["agent"], strict=True):
        words = normalise_words(str(ref))
        if words:
            rows.append((agent, word_errors(words, normalise_words(str(hyp or ""))), len(words)))
    if not rows:
        return {"turns": 0, "note": "no measured turn had reference words"}
    df = pd.DataFrame(rows, columns=["agent", "errors", "words"])
    by_agent = df.groupby("agent")[["errors", "words"]].sum()
    return {
        "turns": len(df),
        "words": int(df["words"].sum()),
        "wer": float(df["errors"].sum() / df["words"].sum()),
        "by_agent": {
            str(a): {"wer": float(r.errors / r.words), "words": int(r.words)} for a, r in by_agent.iterrows()
        },
    }


def evaluate_observer(
    readings: pd.DataFrame,
    ratings: pd.DataFrame,
    pairs: pd.DataFrame,
    *,
    kappa_min: float,
    min_turns: int,
    min_raters: int,
    alpha: float,
    diagnostics: dict[str, Any] | None = None,
    reader: str = "rules",
    metrics_reader: str | None = None,
) -> ObserverVerdict:
    """The gate from the caller's readings (made by `reader`), the observer labels and the pairs frame."""
    thresholds = {"kappa": kappa_min, "min_turns": min_turns, "min_raters": min_raters, "alpha": alpha}
    diag = diagnostics or {}
    pid = pairs["pair_id"]
    if ratings.empty:
        return ObserverVerdict(
            "not-evaluable",
            "no observer ratings in ratings/labels.jsonl (voice-audit rate --task observer); "
            f"burden and safety counts rest on an unvalidated reading (reader {reader})",
            {"reader": reader, "metrics_reader": metrics_reader or reader},
            diag,
            pd.Series("not-evaluable", index=pid, dtype=object),
            thresholds,
        )
    compared = compare(readings, ratings, min_raters)
    n = len(compared)
    k = cohen_kappa(compared["classification"], compared["majority_act"])
    if n < min_turns or k.value is None:
        overall: Verdict = "not-evaluable"
    else:
        overall = "pass" if k.value >= kappa_min else "fail"
    cells = differential(compared, pairs, alpha)
    cell_of = pd.Series(_cell_of(pairs).to_numpy(), index=pid)
    ranks = {"pass": 0, "not-evaluable": 1, "fail": 2}
    by_pair = cell_of.map(
        lambda c: max((overall, cells.get(c, {}).get("verdict", "not-evaluable")), key=lambda v: ranks[v])
    ).astype(object)
    cell_verdicts = [c["verdict"] for c in cells.values()]
    verdict: Verdict = max([overall, *cell_verdicts], key=lambda v: ranks[v])
    differential_fail = sorted(c for c, v in cells.items() if v["verdict"] == "fail")
    confusion = compared.groupby(["majority_act", "classification"]).size()
    details = {
        "reader": reader,
        "metrics_reader": metrics_reader or reader,
        "turns_compared": n,
        "turns_rated": int(ratings[["episode_id", "turn"]].drop_duplicates().shape[0]),
        "raters": int(ratings["rater"].nunique()),
        "kappa": k.value,
        "kappa_ci": [k.ci_low, k.ci_high],
        "misread_rate": float(compared["misread"].mean()) if n else None,
        "safety_acts": {act: act_figures(compared, act) for act in SAFETY_ACTS},
        "overall_verdict": overall,
        "cells": cells,
        "confusion": [{"raters": a, "caller": b, "turns": int(c)} for (a, b), c in confusion.items()],
    }
    kv = "undefined" if k.value is None else f"{k.value:.3f}"
    safety_read = {act: act_figures(compared, act) for act in SAFETY_ACTS}
    figures = "; ".join(
        f"{act} recall {_pct(f['recall'])}, false positives {_pct(f['false_positive_rate'])}"
        for act, f in safety_read.items()
    )
    evidence = (
        f"caller's reading (reader {reader}) vs raters' majority on {n} turns: Cohen's kappa {kv} (needs >= {kappa_min} on >= {min_turns} turns)"
        f"; safety acts as the metrics read them (reader {metrics_reader or reader}): {figures}"
        f"; misreading rate a vs b by paired sign-flip per cell: {len(cells) - len(differential_fail)} of {len(cells)} cells "
        "without a differential error"
        + (f"; differential observer error in {differential_fail}" if differential_fail else "")
    )
    return ObserverVerdict(verdict, evidence, details, diag, by_pair, thresholds)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _with_ids(frame: pd.DataFrame, episodes: pd.Index) -> pd.DataFrame:
    out = frame.drop(columns=["ep"]).copy()
    out.insert(0, "episode_id", np.asarray(episodes)[frame["ep"].to_numpy(dtype=int)])
    if "turn" in out:
        out["turn"] = out["turn"].astype(int)
    return out.reset_index(drop=True)


@dataclass
class ObserverInputs:
    """What the gate reads from the event table, keyed by episode id and turn."""

    readings: pd.DataFrame  # the acting reading: caller_decision, with the metrics reader's acts
    other: pd.DataFrame  # the second reader: caller_reading
    reader: str  # the acting reader's name
    agent_words: pd.DataFrame  # agent_transcript with source agent, plus the episode's agent
    asr_heard: pd.DataFrame  # asr_check
    metrics_reader: str = "rules"  # the reader of the reading-based safety events
    to_label: pd.DataFrame = field(default_factory=pd.DataFrame)  # turns the two readers disagreed on


def observer_inputs(table: Any, episode_agents: pd.Series, model: Any = "auto") -> ObserverInputs:
    """From an `EventTable`; `episode_agents` maps episode id to agent name (for the WER diagnostic);
    `model`: the turn model of the metrics reader (`"auto"`: the one `safety.extract` uses)."""
    cols = ["ep", "turn", "classification", "challenge_fact"]
    tm = safety.metrics_model() if isinstance(model, str) else model
    decided = table.of_type("caller_decision", columns=[*cols, "acts", "heard"])
    metrics = safety.reread(decided, tm)
    decided = decided[cols].assign(
        metrics_acts=metrics["acts"].to_numpy(), disagree=metrics["disagree"].to_numpy()
    )
    readings = _with_ids(decided.drop(columns=["disagree"]), table.episodes)
    to_label = _with_ids(decided.loc[decided["disagree"], ["ep", "turn"]], table.episodes)
    named = ["acting_reader"] if "acting_reader" in table.df.columns else []  # older logs lack it
    other_rows = table.of_type("caller_reading", columns=[*cols, *named])
    reader = acting_reader(other_rows)
    other = _with_ids(other_rows.drop(columns=named), table.episodes)
    words = table.of_type("agent_transcript", columns=["ep", "turn", "text", "source"])
    words = _with_ids(words[words["source"] == "agent"].drop(columns=["source"]), table.episodes)
    words = words.groupby(["episode_id", "turn"], as_index=False)["text"].agg(lambda t: " ".join(map(str, t)))
    words["agent"] = words["episode_id"].map(episode_agents)
    heard = _with_ids(table.of_type("asr_check", columns=["ep", "turn", "text"]), table.episodes)
    metrics_reader = tm.name if tm is not None else reader
    return ObserverInputs(readings, other, reader, words, heard, metrics_reader, to_label)


def turns_to_label(to_label: pd.DataFrame, shown: int = 50) -> dict[str, Any]:
    """Diagnostic: the agent turns on which the caller's reading and the turn model disagreed about
    a refusal or a repair request, the turns whose human labels teach the most."""
    if to_label.empty:
        return {"turns": 0}
    rows = to_label.drop_duplicates(["episode_id", "turn"]).sort_values(["episode_id", "turn"])
    return {
        "turns": len(rows),
        "first": [
            {"episode_id": str(e), "turn": int(t)} for e, t in rows.head(shown).itertuples(index=False)
        ],
        "task": "voice-audit rate --task observer",
    }
