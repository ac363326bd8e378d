"""The n-gram head's features: the terms a turn is made of, the vocabulary's weights, unit-length
rows that ignore unknown terms, and a head that reads them as its weights say."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voice_audit.analysis.metrics.turn_ngrams import NgramHeads, rows, terms, vocabulary


def test_terms_are_word_and_letter_ngrams_with_counts() -> None:
    t = terms("It stays. It STAYS!")
    assert t["w:it"] == 2 and t["w:stays"] == 2 and t["w:it stays"] == 2 and t["w:stays it"] == 1
    assert t["w:it stays it"] == 1 and "w:it stays it stays" not in t  # up to three words
    assert t["c: it "] == 2 and t["c:tay"] == 2 and t["c: stay"] == 2  # letters inside padded words
    assert "c:s i" not in t  # never across two words
    assert terms("") == {}


def test_the_vocabulary_keeps_terms_of_enough_turns_with_smoothed_idf() -> None:
    kept, idf = vocabulary(["no refund", "no way", "refund done"], min_df=2)
    assert "w:no" in kept and "w:refund" in kept and "w:way" not in kept and kept == sorted(kept)
    assert idf[kept.index("w:no")] == pytest.approx(math.log(4 / 3) + 1)


def test_rows_are_unit_length_and_drop_unknown_terms() -> None:
    kept, idf = vocabulary(["no refund", "no way", "refund done", "no refund today"], min_df=1)
    index = {t: i for i, t in enumerate(kept)}
    (cols, vals), (empty_cols, _) = rows(["no refund no", "zzz"], index, idf)
    assert np.linalg.norm(vals) == pytest.approx(1.0) and len(set(cols.tolist())) == len(cols)
    assert (
        vals[cols.tolist().index(index["w:no"])] > vals[cols.tolist().index(index["w:refund"])]
    )  # counted twice
    assert len(empty_cols) == 0


def test_the_head_reads_the_weighted_row() -> None:
    kept, idf = vocabulary(["no refund", "refund done"], min_df=1)
    w = np.array([2.0 if t == "w:no" else 0.0 for t in kept])
    heads = NgramHeads.from_json(
        {"terms": kept, "idf": idf.tolist(), "mix": 0.5, "heads": {"denial": {"w": w.tolist(), "b": -1.0}}},
        ["denial"],
    )
    ((cols, vals),) = rows(["no refund"], heads.index, heads.idf)
    expected = 1 / (1 + math.exp(-(vals @ w[cols] - 1.0)))
    (p,) = heads.probabilities(["no refund"])
    assert p["denial"] == pytest.approx(expected) and expected > 1 / (1 + math.exp(1.0)) and heads.mix == 0.5
    assert heads.probabilities(["refund done"])[0]["denial"] == pytest.approx(1 / (1 + math.exp(1.0)))
