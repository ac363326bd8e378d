"""The turn model's second head: the words and letters of an agent turn, weighed by a linear head.

A sentence encoder hears what a turn means in general and misses the wording that makes it a
refusal in customer care ("stays on the account", "is final", "ring your bank"); word and letter
n-grams carry that wording. Each turn becomes its word n-grams (one to three words) and its
letter n-grams (three to five letters, inside each word padded with a space at both ends), each
counted, log-scaled (1 + ln count), weighed by its inverse document frequency over the training
turns and the whole scaled to unit length; a logistic head per act reads that vector. The terms,
their weights and the heads are trained on the development part of the observer corpus only
(`benchmarks/train_turn_model.py`), so the tokenisation here is the one they were trained with.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

TOKEN = re.compile(r"[a-z0-9']+")
WORD_N = (1, 3)
CHAR_N = (3, 5)


def terms(text: str) -> Counter[str]:
    """The turn's word (`w:`) and letter (`c:`) n-grams with their counts."""
    words = TOKEN.findall(text.lower())
    out: Counter[str] = Counter()
    for n in range(WORD_N[0], WORD_N[1] + 1):
        for i in range(len(words) - n + 1):
            out["w:" + " ".join(words[i : i + n])] += 1
    for word in words:
        padded = f" {word} "
        for n in range(CHAR_N[0], CHAR_N[1] + 1):
            for i in range(len(padded) - n + 1):
                out["c:" + padded[i : i + n]] += 1
    return out


def vocabulary(texts: Iterable[str], min_df: int = 2) -> tuple[list[str], np.ndarray]:
    """The terms of at least `min_df` texts (sorted) and their smoothed inverse document
    frequencies, ln((1 + n) / (1 + df)) + 1."""
    df: Counter[str] = Counter()
    n = 0
    for text in texts:
        n += 1
        df.update(terms(text).keys())
    kept = sorted(t for t, d in df.items() if d >= min_df)
    idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in kept])
    return kept, idf


def rows(
    texts: Sequence[str], index: Mapping[str, int], idf: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per text the columns and values of its unit-length weighted term vector (terms outside the
    vocabulary are dropped)."""
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for text in texts:
        counts = [(index[t], c) for t, c in terms(text).items() if t in index]
        cols = np.array([j for j, _ in counts], dtype=np.int64)
        vals = np.array([(1.0 + math.log(c)) * idf[j] for j, c in counts], dtype=np.float64)
        norm = float(np.sqrt((vals * vals).sum()))
        out.append((cols, vals / norm if norm > 0 else vals))
    return out


@dataclass(frozen=True)
class NgramHeads:
    """The vocabulary, its weights, a linear head per act and the head's weight `mix` beside the
    encoder head's (1 - mix)."""

    index: dict[str, int]
    idf: np.ndarray
    weights: dict[str, np.ndarray]
    bias: dict[str, float]
    mix: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any], acts: Sequence[str]) -> NgramHeads:
        return cls(
            index={t: i for i, t in enumerate(data["terms"])},
            idf=np.asarray(data["idf"], dtype=np.float64),
            weights={a: np.asarray(data["heads"][a]["w"], dtype=np.float64) for a in acts},
            bias={a: float(data["heads"][a]["b"]) for a in acts},
            mix=float(data["mix"]),
        )

    def probabilities(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """Per text the head's probability of each act."""
        out: list[dict[str, float]] = []
        for cols, vals in rows(texts, self.index, self.idf):
            out.append(
                {
                    a: 1.0 / (1.0 + math.exp(-(float(vals @ w[cols]) + self.bias[a])))
                    for a, w in self.weights.items()
                }
            )
        return out


__all__ = ["NgramHeads", "rows", "terms", "vocabulary"]
