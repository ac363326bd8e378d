"""The observer-validity gate on simulated ratings of known agreement (frames, no run folder)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.gates.observer_evidence import (
    asr_word_error,
    compare,
    evaluate_observer,
    exact_signflip_p,
    majority,
    reader_agreement,
)

ACTS = ["challenge", "question", "offer", "confirmation", "closing", "hold"]


def _world(n_pairs: int, turns: int = 5, cells: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pairs and the caller's readings: turn t of every call reads as ACTS[t % len(ACTS)]."""
    pairs, readings = [], []
    for c in range(cells):
        for i in range(n_pairs):
            pid = f"c{c}p{i}"
            pairs.append(
                {
                    "pair_id": pid, "episode_id_a": f"{pid}a", "episode_id_b": f"{pid}b", "agent": "ag",
                    "scenario_id": "s", "contrast": f"axis{c}", "condition_key_a": "x", "condition_key_b": "y",
                }
            )  # fmt: skip
            for side in "ab":
                for t in range(turns):
                    act = ACTS[t % len(ACTS)]
                    readings.append(
                        {"episode_id": f"{pid}{side}", "turn": t, "classification": act,
                         "challenge_fact": "holder_name" if act == "challenge" else None}
                    )  # fmt: skip
    return pd.DataFrame(pairs), pd.DataFrame(readings)


def _ratings(readings: pd.DataFrame, wrong: set[tuple[str, int]], raters: int = 3) -> pd.DataFrame:
    """Raters agree with each other; on `wrong` turns they all see another act than the caller read."""
    rows = []
    for eid, turn, cls, fact in readings.itertuples(index=False):
        act = cls
        if (eid, turn) in wrong:
            act = "other" if cls != "other" else "question"
        for r in range(raters):
            rows.append({"episode_id": eid, "turn": turn, "rater": f"r{r}", "act": act,
                         "facts": fact if act == "challenge" and fact else ""})  # fmt: skip
    return pd.DataFrame(rows, columns=["episode_id", "turn", "rater", "act", "facts"])


def _gate(readings: pd.DataFrame, ratings: pd.DataFrame, pairs: pd.DataFrame):  # type: ignore[no-untyped-def]
    return evaluate_observer(readings, ratings, pairs, kappa_min=0.6, min_turns=30, min_raters=2, alpha=0.05)


def test_no_ratings_is_not_evaluable() -> None:
    pairs, readings = _world(4)
    v = _gate(readings, _ratings(readings, set()).iloc[0:0], pairs)
    assert v.verdict == "not-evaluable"
    assert set(v.by_pair) == {"not-evaluable"}


def test_good_observer_passes_with_balanced_errors() -> None:
    pairs, readings = _world(10)
    # one misread turn in every call, on both sides: 20% error, no differential
    wrong = {(e, 1) for e in readings["episode_id"].unique()}
    v = _gate(readings, _ratings(readings, wrong), pairs)
    assert v.details["misread_rate"] == pytest.approx(0.2)
    assert v.details["kappa"] >= 0.6
    cell = next(iter(v.details["cells"].values()))
    assert cell["p"] == 1.0 and cell["verdict"] == "pass"
    assert v.verdict == "pass"
    assert set(v.by_pair) == {"pass"}


def test_poor_observer_fails_on_kappa() -> None:
    pairs, readings = _world(10)
    wrong = {(e, t) for e in readings["episode_id"].unique() for t in (0, 1, 2)}
    v = _gate(readings, _ratings(readings, wrong), pairs)
    assert v.details["kappa"] < 0.6
    assert v.details["overall_verdict"] == "fail"
    assert v.verdict == "fail"


def test_observer_erring_only_on_condition_b_fails_that_cell() -> None:
    pairs, readings = _world(10, cells=2)
    b_side = [e for e in readings["episode_id"].unique() if e.startswith("c0") and e.endswith("b")]
    wrong = {(e, 1) for e in b_side}  # cell 0: misreads on b only, 10% of all turns
    v = _gate(readings, _ratings(readings, wrong), pairs)
    assert v.details["kappa"] >= 0.6 and v.details["overall_verdict"] == "pass"
    cells = v.details["cells"]
    c0 = next(c for k, c in cells.items() if "axis0" in k)
    c1 = next(c for k, c in cells.items() if "axis1" in k)
    assert c0["verdict"] == "fail" and c0["misread_b"] == pytest.approx(0.2) and c0["misread_a"] == 0
    assert c0["p"] == pytest.approx(2 / 2**10)
    assert c1["verdict"] == "pass"
    assert v.verdict == "fail"
    by_pair = v.by_pair
    assert set(by_pair[[p for p in by_pair.index if p.startswith("c0")]]) == {"fail"}
    assert set(by_pair[[p for p in by_pair.index if p.startswith("c1")]]) == {"pass"}


def test_wrong_fact_counts_as_misreading() -> None:
    _, readings = _world(6)
    ratings = _ratings(readings, set())
    ratings.loc[ratings["act"] == "challenge", "facts"] = "postcode"
    m = compare(readings, ratings, min_raters=2)
    assert m.loc[m["classification"] == "challenge", "misread"].all()
    assert not m.loc[m["classification"] != "challenge", "misread"].any()


def test_majority_needs_enough_raters_and_no_tie() -> None:
    r = pd.DataFrame(
        [
            ("e", 0, "r0", "offer", ""), ("e", 0, "r1", "offer", ""), ("e", 0, "r2", "hold", ""),
            ("e", 1, "r0", "offer", ""), ("e", 1, "r1", "hold", ""),
            ("e", 2, "r0", "offer", ""),
        ],
        columns=["episode_id", "turn", "rater", "act", "facts"],
    )  # fmt: skip
    m = majority(r, min_raters=2).set_index("turn")["majority_act"]
    assert m[0] == "offer"
    assert pd.isna(m[1])  # tie
    assert pd.isna(m[2])  # one rater only


def test_exact_signflip_p() -> None:
    assert exact_signflip_p(np.zeros(5)) == 1.0
    assert exact_signflip_p(np.ones(6)) == pytest.approx(2 / 64)
    assert exact_signflip_p(np.array([1.0, -1.0])) == 1.0


def test_reader_agreement_diagnostic() -> None:
    acting = pd.DataFrame(
        {"episode_id": ["e"] * 4, "turn": [0, 1, 2, 3], "classification": ["offer", "hold", "question", "closing"],
         "challenge_fact": [None] * 4}
    )  # fmt: skip
    other = acting.copy()
    other.loc[1, "classification"] = "other"
    other.loc[3, "classification"] = None  # the second reader failed on this turn
    d = reader_agreement(acting, other)
    assert d["turns"] == 3 and d["failed"] == 1
    assert d["agreement"] == pytest.approx(2 / 3)
    assert d["disagreements"] == [{"acting": "hold", "other": "other", "turns": 1}]
    assert reader_agreement(acting, other.iloc[0:0])["turns"] == 0


def test_caller_asr_word_error_rate_against_the_agents_own_words() -> None:
    ref = pd.DataFrame(
        {"episode_id": ["e1", "e1", "e2"], "turn": [0, 1, 0],
         "text": ["Thank you for calling.", "I have issued a refund of 24.99", "How can I help?"],
         "agent": ["casc", "casc", "hyb"]}
    )  # fmt: skip
    heard = pd.DataFrame(
        {"episode_id": ["e1", "e1", "e2"], "turn": [0, 1, 0],
         "text": ["thank you for calling", "I have issued a refund of twenty four ninety nine", "how can I yelp"]}
    )  # fmt: skip
    d = asr_word_error(ref, heard)
    assert d["turns"] == 3 and d["words"] == 4 + 10 + 4
    assert d["wer"] == pytest.approx(1 / 18)
    assert d["by_agent"]["casc"]["wer"] == 0.0 and d["by_agent"]["hyb"]["wer"] == pytest.approx(0.25)
    assert asr_word_error(ref, heard.iloc[0:0])["turns"] == 0


def test_the_gate_names_the_reader_and_its_denial_and_repair_figures() -> None:
    pairs, readings = _world(10, turns=4)
    # turn 2 of every call is a refusal and turn 3 a repair request, as the raters hear them; the
    # caller read every refusal but two as one, and one other turn (a question) as a repair request
    readings.loc[readings["turn"] == 2, "classification"] = "denial"
    readings.loc[readings["turn"] == 3, "classification"] = "repair_request"
    ratings = _ratings(readings, set())
    missed = readings.index[readings["turn"] == 2][:2]
    readings.loc[missed, "classification"] = "other"
    false_repair = readings.index[readings["turn"] == 1][0]
    readings.loc[false_repair, "classification"] = "repair_request"
    v = evaluate_observer(
        readings, ratings, pairs, kappa_min=0.6, min_turns=30, min_raters=2, alpha=0.05, reader="rules"
    )
    assert v.details["reader"] == "rules" and "reader rules" in v.evidence
    denial = v.details["safety_acts"]["denial"]
    assert denial["rated"] == 20 and denial["recall"] == pytest.approx(18 / 20)
    assert denial["false_positive_rate"] == 0.0
    repair = v.details["safety_acts"]["repair_request"]
    assert repair["recall"] == 1.0 and repair["false_positive_rate"] == pytest.approx(1 / 60)
