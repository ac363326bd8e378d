"""The stimulus-intelligibility gate with simulated raters: each condition's human WER under the
plan's ceiling and the a - b gap under its margin; no raters, not evaluable."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest

from voice_audit.analysis.gates import GATES
from voice_audit.analysis.gates.base import GateInputs
from voice_audit.analysis.gates.intelligibility import (
    evaluate_intelligibility,
    read_intelligibility_labels,
    stimulus_intelligibility,
)
from voice_audit.analysis.plan import load_plan
from voice_audit.analysis.rating.store import LabelRecord, LabelStore

LINES = [
    "I was charged twice for the same order last week",
    "the amount was twenty four ninety nine on my card",
    "my account number is four four seven one two",
    "could you refund the duplicate charge please",
    "yes the card ends in three three one eight",
    "I would like to speak to a person about this",
]
VOCAB = ["bill", "order", "card", "charge", "refund", "the", "a", "week", "number", "please"]


def episodes() -> pd.DataFrame:
    """Two conditions, three voices each; one episode per voice and side."""
    rows = [
        {"episode_id": f"{side}{v}", "condition_key": f"cond_{side}", "voice_id": f"cond_{side}#v{v}"}
        for side in "ab"
        for v in range(3)
    ]
    return pd.DataFrame(rows)


def pairs() -> pd.DataFrame:
    return pd.DataFrame(
        [{"pair_id": f"p{v}", "condition_key_a": "cond_a", "condition_key_b": "cond_b"} for v in range(3)]
    )


def mishear(text: str, p: float, rng: random.Random) -> str:
    """A listener who loses each word with probability p (dropped or heard as another word)."""
    out: list[str] = []
    for w in text.split():
        if rng.random() < p:
            if rng.random() < 0.5:
                out.append(rng.choice(VOCAB))
        else:
            out.append(w)
    return " ".join(out)


def simulated(p_a: float, p_b: float, raters: int = 4, seed: int = 0) -> pd.DataFrame:
    """Every rater transcribes every line of every voice; condition a misheard at p_a, b at p_b."""
    rng = random.Random(seed)
    rows = []
    for r in range(raters):
        for side, p in (("a", p_a), ("b", p_b)):
            for v in range(3):
                for turn, line in enumerate(LINES, start=1):
                    rows.append(
                        {
                            "episode_id": f"{side}{v}",
                            "turn": turn,
                            "rater": f"r{r}",
                            "reference": line,
                            "heard": mishear(line, p, rng),
                        }
                    )
    return pd.DataFrame(rows)


def run(labels: pd.DataFrame) -> tuple[str, str, dict[str, Any], pd.Series]:
    th = load_plan().gates.intelligibility
    return evaluate_intelligibility(
        labels, episodes(), pairs(),
        min_raters=th.min_raters, min_words=th.min_words, max_wer=th.max_wer, max_gap=th.max_gap,
    )  # fmt: skip


def test_raters_who_understand_b_worse_fail_the_cell() -> None:
    verdict, evidence, details, by_pair = run(simulated(0.05, 0.45))
    conds = details["conditions"]
    assert conds["cond_a"]["verdict"] == "pass" and conds["cond_b"]["verdict"] == "fail"
    assert conds["cond_b"]["wer"] > 0.25 > conds["cond_a"]["wer"]
    assert verdict == "fail" and (by_pair == "fail").all()
    assert "beyond 0.15" in evidence


def test_a_gap_beyond_the_margin_fails_even_under_the_ceiling() -> None:
    verdict, evidence, details, _ = run(simulated(0.02, 0.24, raters=6, seed=3))
    conds = details["conditions"]
    assert conds["cond_a"]["verdict"] == conds["cond_b"]["verdict"] == "pass"
    (cell,) = details["cells"].values()
    assert cell["gap"] < -0.15 and verdict == "fail", evidence


def test_a_moderate_equal_word_error_passes() -> None:
    verdict, evidence, details, by_pair = run(simulated(0.15, 0.15, seed=1))
    conds = details["conditions"]
    assert 0.05 < conds["cond_a"]["wer"] < 0.25 and 0.05 < conds["cond_b"]["wer"] < 0.25
    assert verdict == "pass" and (by_pair == "pass").all(), evidence
    assert set(conds["cond_a"]["by_voice"]) == {"cond_a#v0", "cond_a#v1", "cond_a#v2"}
    assert len(conds["cond_b"]["by_rater"]) == 4


def test_without_enough_raters_not_evaluable() -> None:
    verdict, evidence, _, by_pair = run(simulated(0.0, 0.0).iloc[:0])
    assert verdict == "not-evaluable" and "--task intelligibility" in evidence
    assert (by_pair == "not-evaluable").all()
    verdict, _, details, _ = run(simulated(0.0, 0.0, raters=2))
    assert verdict == "not-evaluable" and details["conditions"]["cond_a"]["raters"] == 2
    # one condition failing is a failure whatever the other's evidence
    few = simulated(0.6, 0.0, raters=3)
    few = few[~((few["episode_id"].str.startswith("b")) & (few["rater"] != "r0"))]
    assert run(few)[0] == "fail"


def test_gate_reads_the_stores_labels_and_is_listed(tmp_path: Path) -> None:
    assert "stimulus_intelligibility" in GATES
    store = LabelStore(tmp_path)
    labels = simulated(0.05, 0.45, raters=3)
    for i, row in enumerate(labels.itertuples()):
        store.append(
            LabelRecord(
                task="intelligibility", rater=row.rater, item=f"intelligibility:{row.episode_id}:{row.turn}",
                episode_id=row.episode_id, audio="caller", turn=row.turn, reference=row.reference,
                heard=row.heard, position=i, plays=1, response_ms=10, session="s",
                labelled_at=dt.datetime.now(dt.UTC),
            )
        )  # fmt: skip
    read, skipped = read_intelligibility_labels(tmp_path)
    assert skipped == [] and len(read) == len(labels)
    inp = GateInputs(
        ing=cast(Any, SimpleNamespace(run_dir=tmp_path)),
        episodes=episodes(),
        pairs=pairs(),
        scenarios={},
        library=None,
        labels=cast(Any, None),
        plan=load_plan(),
    )
    res, by_pair = stimulus_intelligibility(inp)
    assert res.gate == "stimulus_intelligibility" and res.verdict == "fail"
    assert res.thresholds["max_wer"] == pytest.approx(0.25) and list(by_pair) == ["fail"] * 3
