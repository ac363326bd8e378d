"""Word error rate with a text normaliser that makes spoken and written numbers comparable.

Callers' scripts spell numbers as words (eSpeak reads digits in the voice's own language) while
Whisper writes digits, so both sides are normalised: lower case, punctuation dropped, and digit
groups spelled out ("24.99" -> "twenty four ninety nine", the way a caller says a price).
"""

from __future__ import annotations

import re

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n: int) -> list[str]:
    """Spell a non-negative integer below one million."""
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10]] + ([_ONES[n % 10]] if n % 10 else [])
    if n < 1000:
        return [_ONES[n // 100], "hundred"] + (number_words(n % 100) if n % 100 else [])
    if n < 1_000_000:
        return [*number_words(n // 1000), "thousand"] + (number_words(n % 1000) if n % 1000 else [])
    return [_ONES[int(d)] for d in str(n)]


def _spell_digits(token: str) -> list[str]:
    words: list[str] = []
    for group in re.findall(r"\d+", token):
        if len(group) > 1 and group.startswith("0"):
            words.extend(_ONES[int(d)] for d in group)
        else:
            words.extend(number_words(int(group)))
    return words


def normalise_words(text: str) -> list[str]:
    words: list[str] = []
    for token in re.findall(r"[a-z]+(?:'[a-z]+)?|\d+(?:[.,:]\d+)*", text.lower().replace("-", " ")):
        words.extend(_spell_digits(token) if token[0].isdigit() else [token])
    return words


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance over words (substitutions + insertions + deletions)."""
    prev = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        cur = [i] + [0] * len(hypothesis)
        for j, h in enumerate(hypothesis, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate of `hypothesis` against `reference` after normalising both."""
    ref = normalise_words(reference)
    if not ref:
        raise ValueError("reference has no words")
    return word_errors(ref, normalise_words(hypothesis)) / len(ref)
